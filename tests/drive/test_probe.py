"""``acp-proxy probe``, driven for real: the example agent, agents with one bug each, and a
hostile one, each checked through the CLI."""

from __future__ import annotations

import os
import pty
import re
import select
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import HERE, PROXY, SCRIPTED_AGENT, clean_env, invoke

EXAMPLE = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", "0"]
PROBE_AGENT = [sys.executable, str(HERE / "probe_agent.py")]


def probe(
    tmp_path: Path, agent: list[str], *options: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    command = [*PROXY, "probe", "--record", str(tmp_path / "rec.jsonl"), *options, "--", *agent]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, env=env or clean_env()
    )


def checks(tmp_path: Path, agent: list[str], *options: str) -> tuple[int, dict[str, Any], Any]:
    """The JSON report: exit status, each check's outcome by name, the whole document."""
    run = probe(tmp_path, agent, "--format", "json", *options)
    document = orjson.loads(run.stdout)
    return run.returncode, {c["check"]: c for c in document["checks"]}, document


def statuses(found: dict[str, Any]) -> dict[str, str]:
    return {name: check["status"] for name, check in found.items()}


V1_SKIPS = {"authenticate", "lifecycle", "session-load", "session-list", "session-resume",
            "session-fork", "set-config-option", "session-close"}  # fmt: skip
#: The checks that run a prompt turn: a bug of every turn fails each of them.
TURNS = {"prompt", "lifecycle", "resource-link", "empty-prompt", "cancel", "prompt-after-cancel"}


def own_seqs(recording: Path) -> set[int]:
    """The frames the recording marks as the probe's own malformed requests."""
    lines = [orjson.loads(line) for line in recording.read_bytes().splitlines()]
    return {line["seq"] for line in lines if line["kind"] == "probe" and line.get("own")}


def agents_errors(recording: Path) -> list[dict[str, Any]]:
    """validate's error findings of a probe's recording: what is found at the probe's own
    frames (marked in the recording) is said as the probe's, at level info, and counts not."""
    run = invoke("validate", "--format", "json", str(recording))
    found = [orjson.loads(line) for line in run.stdout.splitlines()]
    errors = [f for f in found if f["level"] == "error"]
    assert run.returncode == (1 if errors else 0)
    own = [f for f in found if f["seq"] in own_seqs(recording)]
    assert own and all(f["level"] == "info" and "probe's own" in f["message"] for f in own)
    return errors


@pytest.mark.parametrize("protocol", ["1", "2"])
def test_the_example_agent_passes_every_check_it_can(tmp_path, protocol):
    """Nothing fails; what is skipped is what the agent does not advertise, and says why."""
    status, found, document = checks(tmp_path, EXAMPLE, "--protocol", protocol)
    failed = {
        n: (c["reason"], c.get("findings")) for n, c in found.items() if c["status"] == "fail"
    }
    assert status == 0 and failed == {}, failed
    skips = {name for name, check in found.items() if check["status"] == "skip"}
    # (on a loaded machine the turn may end before the agent reads the cancel: said so)
    if "crossed the cancel" in found["cancel"]["reason"]:
        skips.discard("cancel")
    if protocol == "1":
        assert skips == V1_SKIPS
    else:
        assert skips == {"authenticate", "session-load", "session-fork", "set-mode",
                         "set-config-option"}  # fmt: skip
    assert all(check["reason"] for check in found.values())
    assert document["name"] == "acp-proxy-example-agent" and document["protocol"] == int(protocol)
    recording = Path(document["recording"])
    assert recording == tmp_path / "rec.jsonl"
    # validate finds the probe's own malformed requests (client errors), marked as such in
    # the recording and on their checks, and nothing else
    assert agents_errors(recording) == []
    own = {f["seq"] for c in found.values() for f in c["own_findings"]}
    assert own and own <= own_seqs(recording)
    assert found["invalid-params"]["own_findings"] and not found["invalid-params"]["findings"]


def test_a_misbehaving_example_agent_fails_the_checks_it_breaks(tmp_path):
    status, found, _ = checks(tmp_path, [*EXAMPLE, "--misbehave"], "--protocol", "2")
    assert status == 1
    failed = {name for name, check in found.items() if check["status"] == "fail"}
    assert {"prompt", "lifecycle", "stdout"} <= failed <= TURNS | {"stdout"}
    rules = {f["rule"] for f in found["prompt"]["findings"]}
    assert {"prompt-result-message-id", "usage-fields"} <= rules
    assert found["stdout"]["findings"][0]["rule"] == "not-json"
    seqs = found["prompt"]["seqs"]
    assert all(seqs[0] <= f["seq"] <= seqs[1] for f in found["prompt"]["findings"])


def test_a_clean_agent_passes(tmp_path):
    status, found, _ = checks(tmp_path, PROBE_AGENT)
    assert status == 0, found
    assert found["permission"]["status"] == "pass"
    assert found["cancel"]["reason"].endswith("the turn ended cancelled")


@pytest.mark.parametrize(
    ("bug", "check", "reason"),
    [
        ("banner", "stdout", "not JSON"),
        ("ignore-cancel", "cancel", "updates) and ended the turn end_turn, not cancelled"),
        ("late-update", "prompt", "after the end of the turn"),
        ("other-session", "prompt", "name another session"),
        ("error-prompt", "prompt", "error -32603: no model"),
    ],
)
def test_an_agent_with_one_bug_fails_the_right_check(tmp_path, bug, check, reason):
    status, found, _ = checks(tmp_path, [*PROBE_AGENT, bug])
    assert status == 1
    assert found[check]["status"] == "fail"
    assert reason in found[check]["reason"]
    others = {n for n, c in found.items() if c["status"] == "fail" and n not in (check, "cancel")}
    every_turn = bug in ("late-update", "other-session", "error-prompt")  # (each turn's bug)
    assert others <= (TURNS if every_turn else set()), found


def test_a_wrong_protocol_version_fails_the_handshake_and_stops_the_rest(tmp_path):
    status, found, _ = checks(tmp_path, [*PROBE_AGENT, "wrong-version"])
    assert status == 1
    assert found["handshake"]["status"] == "fail"
    assert "protocolVersion 99" in found["handshake"]["reason"]
    assert found["prompt"] == {
        **found["prompt"],
        "status": "skip",
        "reason": "the handshake failed",
    }


def test_an_agent_that_hangs_at_initialize_is_bounded(tmp_path):
    status, found, document = checks(tmp_path, [*PROBE_AGENT, "hang-init"], "--timeout", "1")
    assert status == 1
    assert found["handshake"]["status"] == "fail"
    reason = found["handshake"]["reason"]
    assert reason.startswith("no response to initialize within 1s (--timeout); ")
    assert reason.endswith(
        "the agent is still running; its stderr ended: probe agent: waiting for the model server"
    )
    assert found["session-new"]["status"] == "skip"
    assert found["permission"]["reason"] == "the handshake failed"  # as the others say
    assert document["recording"] is not None


def test_an_agent_that_exits_at_once_fails_with_its_status_and_stderr(tmp_path):
    status, found, _ = checks(tmp_path, [*PROBE_AGENT, "exit-now"])
    assert status == 1
    reason = found["handshake"]["reason"]
    assert reason.startswith("the agent exited with status 3; its stderr ended: ")
    assert "cannot find my model, giving up" in reason
    assert found["prompt"]["status"] == "skip"
    _, found, _ = checks(tmp_path, [*PROBE_AGENT, "exit-now"], "--only", "stdout")
    assert found["stdout"]["reason"] == (  # what stopped it, though handshake is not asked for
        "the agent wrote nothing on stdout (handshake, run for the checks asked for, failed: "
        "the agent exited with status 3; its stderr ended: probe agent: cannot find my model, "
        "giving up)"
    )


#: An agent that crashes at once with a traceback whose last line is long.
CRASHING = [
    sys.executable,
    "-c",
    "import sys; sys.exit('Traceback (most recent call last):\\nImportError: cannot import "
    "name ' + 'x' * 400 + ' from agent_sdk (/opt/agent/lib/python3.12/agent_sdk.py)')",
]


def test_only_and_skip_take_a_comma_list_as_repeated_options(tmp_path):
    """``--only handshake,session-new`` is ``--only handshake --only session-new``; --prompt
    is taken where a check sends it (permission runs the prompt turn)."""
    _, found, _ = checks(tmp_path, EXAMPLE, "--only", "handshake,session-new")
    assert list(found) == ["handshake", "session-new"]
    _, found, _ = checks(tmp_path, EXAMPLE, "--only", "handshake, stdout", "--skip", "stdout")
    assert list(found) == ["handshake"]
    _, found, _ = checks(tmp_path, EXAMPLE, "--only", "permission", "--prompt", "hi there")
    assert list(found) == ["permission"], found


def test_a_crashing_agents_traceback_is_shown_to_its_end(tmp_path):
    """The last lines of its stderr, fuller than a short field: a long one cut in the
    middle, so the error's start and its end (the file) are both there."""
    run = probe(tmp_path, CRASHING, "--only", "handshake")
    assert run.returncode == 1
    handshake = next(line for line in run.stdout.splitlines() if "handshake" in line)
    assert "the agent exited with status 1; its stderr ended: Traceback" in handshake
    assert "ImportError: cannot import name xxx" in handshake and "…" in handshake
    assert handshake.endswith("from agent_sdk (/opt/agent/lib/python3.12/agent_sdk.py)")


#: An agent that answers every request with an error whose message is long.
LONG_ERROR = [
    sys.executable,
    "-c",
    """
import json, sys
for line in sys.stdin:
    message = "Internal error: " + "x" * 400 + " (raised at agent.py:42)"
    error = {"code": -32603, "message": message}
    print(json.dumps({"jsonrpc": "2.0", "id": json.loads(line)["id"], "error": error}), flush=True)
""",
]


def test_an_error_message_is_shown_to_its_end(tmp_path):
    _, found, _ = checks(tmp_path, LONG_ERROR, "--only", "handshake")
    reason = found["handshake"]["reason"]
    assert reason.startswith("initialize answered with error -32603: Internal error: xxx")
    assert reason.endswith("xxx (raised at agent.py:42)") and "…" in reason


#: A v2 agent with what v2 spells otherwise than v1: its auth methods' ``methodId`` and a
#: select config option, set only with ``"type": "id"`` (which v2 requires).
V2_AGENT = [
    sys.executable,
    "-c",
    """
import json, sys
def send(m):
    print(json.dumps({"jsonrpc": "2.0", **m}), flush=True)
option = {"configId": "mode", "name": "Mode", "type": "select", "currentValue": "auto",
          "options": [{"value": "auto", "name": "Auto"}]}
for line in sys.stdin:
    m = json.loads(line)
    method, ident, p = m.get("method"), m.get("id"), m.get("params") or {}
    if method == "initialize":
        send({"id": ident, "result": {"protocolVersion": 2, "info": {"name": "v2", "version": "1"},
              "capabilities": {},
              "authMethods": [{"type": "agent", "methodId": "api-key", "name": "API key"}]}})
    elif method == "auth/login" and p.get("methodId") == "api-key":
        send({"id": ident, "result": {}})
    elif method == "session/new":
        send({"id": ident, "result": {"sessionId": "s1", "configOptions": [option]}})
    elif method == "session/set_config_option" and p.get("type") == "id":
        send({"id": ident, "result": {"configOptions": [{**option, "currentValue": p["value"]}]}})
    elif ident is not None and method:
        send({"id": ident, "error": {"code": -32602, "message": "Invalid params"}})
""",
]


def test_a_v2_agent_is_spoken_to_in_v2_auth_method_ids_and_config_value_types(tmp_path):
    only = ("handshake", "authenticate", "session-new", "set-config-option")
    options = [x for name in only for x in ("--only", name)]
    status, found, _ = checks(tmp_path, V2_AGENT, "--protocol", "2", "--auth", "api-key", *options)
    assert status == 0 and statuses(found) == dict.fromkeys(only, "pass"), found
    assert found["handshake"]["reason"].endswith("auth methods: api-key")
    validate = invoke("validate", str(tmp_path / "rec.jsonl"))
    assert (validate.returncode, validate.stdout) == (0, b"")


def test_a_terminal_auth_method_is_never_sent_to_auth_login(tmp_path):
    """AuthMethodTerminal: "The client MUST NOT pass this method to auth/login" (the client
    runs the agent in a terminal for it): --auth naming one is a skip, said, and nothing sent."""
    terminal = '{"type": "terminal", "methodId": "login", "name": "Log in"}'
    agent = [
        *V2_AGENT[:2],
        V2_AGENT[2].replace('"authMethods": [', f'"authMethods": [{terminal}, '),
    ]
    only = ("handshake", "authenticate")
    options = [x for name in only for x in ("--only", name)]
    _, found, _ = checks(tmp_path, agent, "--protocol", "2", "--auth", "login", *options)
    assert found["authenticate"]["status"] == "skip"
    assert found["authenticate"]["reason"] == (
        "login is a terminal method: the client runs the agent in a terminal for it, never "
        "auth/login"
    )
    sent = (tmp_path / "rec.jsonl").read_text()
    assert '"method":"auth/login"' not in sent


def test_an_agent_that_wrote_nothing_is_named_by_its_command_and_stdout_is_not_checked(
    tmp_path,
):
    run = probe(tmp_path, ["false"])
    assert run.returncode == 1
    lines = run.stdout.splitlines()
    assert lines[0] == "acp-proxy probe: false, protocol 1"
    assert any(
        line.split() == ["skip", "stdout", "the", "agent", "wrote", "nothing", "on", "stdout"]
        for line in lines
    ), lines
    assert "; false exited with status 1" in lines[-2]


def test_a_command_the_agent_asks_for_runs_only_with_allow_terminal(tmp_path):
    """By default no terminal is advertised: the agent's terminal/create is refused,
    nothing runs, and asking for it fails the check it happened in; with --allow-terminal
    it runs, and stderr says so loudly."""
    marker = tmp_path / "ran"
    status, found, _ = checks(tmp_path, [*PROBE_AGENT, "terminal", str(marker)])
    assert status == 1
    assert not marker.exists()
    assert found["prompt"]["status"] == "fail"
    assert "clientCapabilities.terminal" in found["prompt"]["reason"]

    run = probe(tmp_path, [*PROBE_AGENT, "terminal", "ran"], "--allow-terminal", "--only", "prompt")
    assert run.returncode == 0, run.stdout
    assert "WILL RUN" in run.stderr and "RUNNING A COMMAND" in run.stderr
    assert "  pass  prompt" in run.stdout


def test_a_hostile_agent_reaches_the_output_escaped(tmp_path):
    run = probe(tmp_path, [*SCRIPTED_AGENT, "hostile"])
    assert run.returncode == 1
    for raw in ("\x1b", "\x9b", "\u202e", "\x07", "\r"):
        assert raw not in run.stdout
        assert raw not in run.stderr
    assert "\\x1b]52" in run.stdout


def test_junit_has_a_test_case_per_check(tmp_path):
    run = probe(tmp_path, [*PROBE_AGENT, "banner"], "--format", "junit")
    assert run.returncode == 1
    suite = ET.fromstring(run.stdout).find("testsuite")
    assert suite is not None
    cases = {case.get("name"): case for case in suite.iter("testcase")}
    assert len(cases) == 22 and suite.get("tests") == "22"
    failure = cases["stdout"].find("failure")
    assert failure is not None and "probe agent 1.0 ready" in (failure.get("message") or "")
    assert "\x1b" not in run.stdout
    assert cases["session-load"].find("skipped") is not None
    assert cases["handshake"].find("failure") is None
    assert suite.get("failures") == "1"


def test_only_and_skip_choose_the_checks(tmp_path):
    _, found, _ = checks(tmp_path, PROBE_AGENT, "--only", "prompt", "--only", "stdout")
    assert set(found) == {"prompt", "stdout"}
    _, found, _ = checks(tmp_path, PROBE_AGENT, "--skip", "cancel")
    assert "cancel" not in found and "prompt" in found


def test_the_list_names_each_checks_spec_page():
    run = subprocess.run([*PROXY, "probe", "--list"], capture_output=True, text=True)
    assert run.returncode == 0
    lines = run.stdout.splitlines()
    assert len(lines) == 22
    assert lines[0].startswith("handshake") and lines[0].endswith("(Initialization)")
    assert any(
        "(Prompt Turn (Cancellation); v2 Prompt Lifecycle (Cancellation))" in x for x in lines
    )


def test_the_list_in_json_has_an_object_per_check():
    run = subprocess.run([*PROXY, "probe", "--list", "--format", "json"], capture_output=True)
    assert run.returncode == 0
    listed = orjson.loads(run.stdout)
    assert [c["name"] for c in listed][:2] == ["handshake", "authenticate"] and len(listed) == 22
    assert listed[0] == {**listed[0], "spec": "Initialization"} and listed[0]["description"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ([], "acp-proxy probe: missing argument '-- AGENT [ARGS]...' (acp-proxy probe --help)"),
        (["--", "/nonexistent/agent"], "agent command not found: /nonexistent/agent"),
        (["--only", "bogus", "--", "true"], 'no check "bogus"'),
        (["--list", "--", "true"], "--list takes no AGENT"),
        (["--list", "--timeout", "3"], "--timeout has no effect with --list"),
        (["--list", "--only", "prompt"], "--only has no effect with --list"),
        (["--list", "--color", "always"], "--color has no effect with --list"),
        (["--list", "--format", "junit"], "--format junit has no effect with --list"),
        (["--prompt", "", "--", "true"], "--prompt is empty"),
        (["--timeout", "0", "--", "true"], "out of range"),
        (["--record", "x.jsonl", "--no-record", "--", "true"], "contradict each other"),
    ],
)
def test_a_probe_that_cannot_run_exits_2_with_one_line(args, says):
    run = subprocess.run([*PROXY, "probe", *args], capture_output=True, text=True)
    assert run.returncode == 2
    assert says in run.stderr
    assert "Traceback" not in run.stderr and run.stderr.strip().count("\n") == 0


def _on_a_terminal(tmp_path: Path, env: dict[str, str]) -> bytes:
    """probe's text output, written to a pseudo-terminal."""
    leader, follower = pty.openpty()
    command = [*PROXY, "probe", "--no-record", "--only", "handshake", "--", *PROBE_AGENT]
    with subprocess.Popen(command, stdout=follower, stderr=subprocess.DEVNULL, env=env) as proc:
        os.close(follower)
        out = b""
        while True:
            ready, _, _ = select.select([leader], [], [], 60)
            if not ready:
                break
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal's other end closed
                break
            if not chunk:
                break
            out += chunk
        proc.wait(60)
    os.close(leader)
    return out


def test_colour_only_on_a_terminal_and_never_with_no_color(tmp_path):
    assert b"\x1b[" in _on_a_terminal(tmp_path, clean_env())
    assert b"\x1b[" not in _on_a_terminal(tmp_path, clean_env(NO_COLOR="1"))
    assert "\x1b[" not in probe(tmp_path, PROBE_AGENT, "--only", "handshake").stdout


def test_ctrl_c_stops_the_probe_quietly(tmp_path):
    """SIGINT while the probe waits: exit 130, no traceback, the agent stopped, the
    recording ended."""
    import signal
    import time

    record = tmp_path / "rec.jsonl"
    command = [*PROXY, "probe", "--record", str(record), "--", *PROBE_AGENT, "hang-init"]
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env()
    ) as proc:
        for _ in range(600):  # until the initialize request is recorded
            if record.exists() and b'"initialize"' in record.read_bytes():
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert out == b"" and b"Traceback" not in err
    assert orjson.loads(record.read_bytes().splitlines()[-1])["kind"] == "end"


def test_a_selection_that_leaves_no_check_is_a_usage_error(tmp_path):
    run = probe(tmp_path, EXAMPLE, "--only", "cancel", "--skip", "cancel")
    assert run.returncode == 2 and run.stdout == ""
    assert run.stderr.strip().count("\n") == 0 and "no check" in run.stderr


def test_only_permission_runs_the_turn_it_needs(tmp_path):
    """--only permission: a prompt turn runs (unreported) for permission to watch."""
    run = probe(tmp_path, EXAMPLE, "--only", "permission")
    assert "no turn ran" not in run.stdout, run.stdout
    assert "1 check:" in run.stdout and "prompt" not in run.stdout.split("\n")[1]


def test_an_error_during_a_check_that_skipped_after_its_traffic_began_fails_it():
    """A check that ran frames and then skipped (the cancel check of a turn that ended before
    the cancel could land) fails on an error finding among them, as one that passed does: on
    a loaded machine the misbehaving agent's cancel check skipped and hid its findings. A
    check that skipped before any traffic keeps its skip."""
    from acp_proxy.core.findings import Violation
    from acp_proxy.drive.probe import CHECKS, FAIL, SKIP, Outcome, attribute

    by_name = {check.name: check for check in CHECKS}
    ran = Outcome(by_name["cancel"], SKIP, "the turn ended before it could be cancelled", (5, 9))
    idle = Outcome(by_name["session-fork"], SKIP, "not advertised")
    error = Violation("prompt-result-message-id", "error", "no messageId", "spec", 8)
    warning = Violation("stop-reason-unknown", "warning", "unknown", "spec", 9)
    attribute([ran, idle], [warning])
    assert ran.status == SKIP and ran.findings == [warning]
    attribute([ran, idle], [error])
    assert ran.status == FAIL and ran.reason.startswith("prompt-result-message-id at seq 8")
    assert idle.status == SKIP and idle.findings == []


def _frames(path: Path) -> list[dict[str, Any]]:
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return [line for line in lines if line["kind"] == "frame"]


def test_a_timed_out_turn_is_cancelled_and_waited_for(tmp_path):
    """A turn still streaming at --timeout: the probe says the bound it set, cancels, and
    waits for the prompt's answer before the next turn, so no prompt overlaps another and
    the agent is not blamed for what the probe did."""
    _, found, _ = checks(tmp_path, [*PROBE_AGENT, "slow-stream"], "--timeout", "3")
    reason = found["prompt"]["reason"]
    assert found["prompt"]["status"] == "fail"
    assert reason.startswith("the turn did not end within 3s (--timeout); "), reason
    assert "after session/cancel it ended cancelled" in reason
    rules = {f["rule"] for c in found.values() for f in c["findings"]}
    assert not rules & {"prompt-overlap", "cancelled-without-cancel"}, found
    assert found["cancel"]["status"] == "pass", found["cancel"]


def test_a_turn_that_never_ends_leaves_its_session_to_it(tmp_path):
    """Its prompt never answered, no other prompt is sent (nor to its session); the checks
    that need it say why they have nothing to check."""
    _, found, _ = checks(tmp_path, [*PROBE_AGENT, "endless"], "--timeout", "1")
    assert found["prompt"]["reason"].startswith("the turn did not end within 1s (--timeout); ")
    assert "its prompt was not answered within 1s of session/cancel" in found["prompt"]["reason"]
    assert found["cancel"]["status"] == "skip"  # (fail fast: the first turn failed)
    rules = {f["rule"] for c in found.values() for f in c["findings"]}
    assert not rules & {"prompt-overlap", "cancelled-without-cancel"}, found
    prompts = [
        f["msg"]["params"]["sessionId"]
        for f in _frames(tmp_path / "rec.jsonl")
        if f["msg"].get("method") == "session/prompt"
    ]
    first = found["session-new"]["reason"].split()[-1]
    assert prompts.count(first) == 1  # never prompted again
    assert found["prompt"]["status"] == "fail"
    assert found["permission"]["status"] == "skip"
    assert found["permission"]["reason"] == "the prompt check failed"


def test_permissions_cancel_cancels_the_turn(tmp_path):
    """The answer cancelled is a cancelled turn's: session/cancel goes before it, and the
    turn must end cancelled."""
    status, found, _ = checks(tmp_path, PROBE_AGENT, "--permissions", "cancel")
    assert status == 0, found
    assert found["prompt"]["reason"].startswith("ended cancelled"), found["prompt"]
    assert "ended cancelled" in found["permission"]["reason"]
    frames = _frames(tmp_path / "rec.jsonl")
    sent = [f["msg"] for f in frames if f["from"] == "client"]
    cancel = next(i for i, m in enumerate(sent) if m.get("method") == "session/cancel")
    answer = next(i for i, m in enumerate(sent) if m.get("id") == 100 and "result" in m)
    assert cancel < answer and sent[answer]["result"]["outcome"] == {"outcome": "cancelled"}


def test_a_refused_file_access_is_noted_on_its_check(tmp_path):
    """The refusal is the probe's safety, not the agent's bug: a note, not a failure."""
    evil = tmp_path / "evil"
    status, found, _ = checks(tmp_path, [*PROBE_AGENT, "fs", str(evil)], "--only", "prompt")
    assert status == 0 and found["prompt"]["status"] == "pass"
    assert found["prompt"]["notes"] == [
        f"refused fs/read_text_file outside the sandbox: {evil}",
        f"refused fs/write_text_file outside the sandbox: {evil}.written",
    ]
    run = probe(tmp_path, [*PROBE_AGENT, "fs", str(evil)], "--only", "prompt")
    assert f"note: refused fs/write_text_file outside the sandbox: {evil}.written" in run.stdout
    run = probe(tmp_path, [*PROBE_AGENT, "fs", str(evil)], "--only", "prompt", "--format", "junit")
    assert f"refused fs/read_text_file outside the sandbox: {evil}" in run.stdout
    assert not evil.exists()


def test_the_protocol_versions_an_agent_may_answer(tmp_path):
    _, found, _ = checks(tmp_path, [*PROBE_AGENT, "wrong-version"])
    assert found["handshake"]["reason"] == (
        "answered protocolVersion 99, which the probe cannot speak: it asked for 1, and an "
        "agent answers that version or an earlier one (1)"
    )
    _, found, _ = checks(tmp_path, [*PROBE_AGENT, "wrong-version"], "--protocol", "2")
    assert found["handshake"]["reason"].endswith("asked for 2, and an agent answers that "
                                                 "version or an earlier one (1 or 2)")  # fmt: skip


def test_a_wire_string_is_escaped_and_quoted_not_a_repr(tmp_path):
    from acp_proxy.drive.words import shown

    _, found, _ = checks(tmp_path, [*PROBE_AGENT, "bad-stop"], "--only", "prompt")
    stop = shown("end_turn\x1b[31mRED\x07\nFAKE: line\r\u202eevil")
    assert found["prompt"]["reason"] == (
        f'the turn ended with stop reason "{stop}", not one of ACP\'s'
    )
    _, found, _ = checks(tmp_path, [*PROBE_AGENT, "bad-stop"], "--only", "cancel")
    assert f'ended "{stop}"' in found["cancel"]["reason"], found["cancel"]


def test_an_auth_method_not_offered_names_those_offered(tmp_path):
    _, found, _ = checks(tmp_path, [*PROBE_AGENT, "auth"], "--auth", "bogus")
    assert found["authenticate"]["reason"] == (
        "bogus is not among the agent's authMethods (it offers: oauth, api-key)"
    )
    _, found, _ = checks(tmp_path, PROBE_AGENT, "--auth", "bogus", "--only", "authenticate")
    assert found["authenticate"]["reason"].endswith("(it offers none)")


@pytest.mark.parametrize(
    ("bug", "check", "reason", "rule", "also"),
    [
        ("same-id", "session-id-unique", "answered the first one's id", None, set()),
        ("answer-cancel", "cancel-idle", "answered the session/cancel notification", None,
         {"cancel"}),
        ("stale-cancel", "prompt-after-cancel", "ended cancelled, though nothing cancelled it",
         None, set()),
        ("no-resource-link", "resource-link", "error -32603: no model", None, set()),
        ("empty-error", "empty-prompt", "error -32603: no model", None, set()),
        ("list-not-found", "session-list", "answered with error -32601",
         "baseline-method-not-found", set()),
        ("load-late", "session-load", "after the session/load response",
         "load-replay-after-response", set()),
        ("terminal-auth", "handshake", "capability-auth-terminal at seq", "capability-auth-terminal",
         set()),
    ],
)  # fmt: skip
def test_each_new_check_fails_on_its_bug_and_points_at_the_frame(
    tmp_path, bug, check, reason, rule, also
):
    """One bug: the right check fails, with the frame to look at (within the check's frames,
    shown by the command it names), the rule where one was broken, and the spec's page."""
    status, found, _ = checks(tmp_path, [*PROBE_AGENT, bug])
    assert status == 1
    outcome = found[check]
    assert outcome["status"] == "fail" and reason in outcome["reason"], outcome
    others = {n for n, c in found.items() if c["status"] == "fail"} - {check}
    assert others <= also, found
    seq, (low, high) = outcome["seq"], outcome["seqs"]
    assert low <= seq <= high
    record = tmp_path / "rec.jsonl"
    assert outcome["see"][0] == f"acp-proxy show --seq {seq} {record}"
    assert outcome["see"][-1] == outcome["link"]
    assert outcome["link"].startswith("https://agentclientprotocol.com/protocol/v1/")
    if rule is not None:
        assert rule in {f["rule"] for f in outcome["findings"]}
        assert f"acp-proxy rules {rule}" in outcome["see"]
    shown = invoke("show", "--seq", str(seq), str(record))
    assert shown.returncode == 0 and f"seq {seq}".encode() in shown.stdout
    # said in the text report too
    run = probe(tmp_path, [*PROBE_AGENT, bug], "--only", check)
    assert "see: acp-proxy show --seq " in run.stdout and outcome["link"] in run.stdout


def test_terminal_auth_offered_unasked_passes_when_initialized_plainly(tmp_path):
    """Sent as editors send it (the _meta opt-in), the agent offers a terminal auth method the
    client did not enable: a finding; sent plainly, it offers none."""
    status, found, _ = checks(tmp_path, [*PROBE_AGENT, "terminal-auth"], "--initialize", "plain")
    assert status == 0 and found["handshake"]["status"] == "pass", found["handshake"]
    sent = _frames(tmp_path / "rec.jsonl")[0]["msg"]["params"]["clientCapabilities"]
    assert "_meta" not in sent
    (tmp_path / "editor").mkdir()
    checks(tmp_path / "editor", PROBE_AGENT, "--only", "handshake")
    sent = _frames(tmp_path / "editor" / "rec.jsonl")[0]["msg"]["params"]["clientCapabilities"]
    assert sent["_meta"] == {"terminal-auth": True, "terminal_output": True}


@pytest.mark.parametrize(
    ("bug", "reason"),
    [
        ("v2-no-message-id", "the prompt's response carries no messageId"),
        ("v2-no-user-message", "no user_message update with the prompt's messageId"),
        ("v2-late-running", "agent_message_chunk (seq "),
    ],
)
def test_a_v2_lifecycle_bug_fails_lifecycle(tmp_path, bug, reason):
    status, found, _ = checks(tmp_path, [*PROBE_AGENT, bug], "--protocol", "2")
    assert status == 1
    assert found["lifecycle"]["status"] == "fail" and reason in found["lifecycle"]["reason"]
    assert (
        found["lifecycle"]["link"] == "https://agentclientprotocol.com/protocol/v2/prompt-lifecycle"
    )
    failed = {n for n, c in found.items() if c["status"] == "fail"}
    assert failed <= TURNS, found


def test_a_v2_turn_that_goes_on_after_cancel_fails_cancel(tmp_path):
    """v2: "the Agent MUST send an idle state_update session update with the cancelled stop
    reason" after session/cancel."""
    status, found, _ = checks(tmp_path, [*PROBE_AGENT, "ignore-cancel"], "--protocol", "2",
                              "--only", "cancel")  # fmt: skip
    assert status == 1
    assert "and ended the turn end_turn, not cancelled" in found["cancel"]["reason"]
    assert found["cancel"]["link"].endswith("/v2/prompt-lifecycle")


def test_a_v2_turn_without_idle_fails_the_prompt(tmp_path):
    status, found, _ = checks(
        tmp_path, [*PROBE_AGENT, "v2-no-idle"], "--protocol", "2", "--only", "prompt",
        "--timeout", "2",
    )  # fmt: skip
    assert status == 1
    assert found["prompt"]["reason"].startswith("the turn did not end within 2s")


@pytest.mark.parametrize("protocol", ["1", "2"])
@pytest.mark.parametrize("agent", ["good", "load", "load-open"])
def test_a_correct_agent_passes(tmp_path, protocol, agent):
    """Under v1 and v2; one that will not load a session still open, but loads it once
    closed, passes too (no sentence requires the first)."""
    status, found, document = checks(tmp_path, [*PROBE_AGENT, agent], "--protocol", protocol)
    failed = {n: c["reason"] for n, c in found.items() if c["status"] == "fail"}
    assert status == 0 and failed == {}, failed
    assert agents_errors(Path(document["recording"])) == []
    if agent == "load-open" and protocol == "1":
        load = found["session-load"]
        assert load["status"] == "pass"
        assert "after session/close" in load["reason"] and "already loaded" in load["reason"]


def test_only_still_needs_the_handshake(tmp_path):
    """--only prompt against an agent that never answers initialize: the handshake, run for
    it, failed: said, and the probe fails."""
    status, found, _ = checks(tmp_path, [*PROBE_AGENT, "hang-init"], "--only", "prompt",
                              "--timeout", "1")  # fmt: skip
    assert status == 1
    assert found["handshake"]["status"] == "fail" and found["handshake"]["needed"] is True
    assert found["prompt"]["status"] == "skip"
    run = probe(tmp_path, [*PROBE_AGENT, "hang-init"], "--only", "prompt", "--timeout", "1")
    assert run.returncode == 1
    assert "(not asked for: run for the checks asked for)" in run.stdout


@pytest.mark.parametrize(
    "args",
    [
        ["--", "/nonexistent/agent"],
        ["--prompt", "", "--", "true"],
        ["--timeout", "0", "--", "true"],
        ["--only", "bogus", "--", "true"],
    ],
)
def test_json_and_junit_say_why_the_probe_cannot_run(args):
    run = subprocess.run([*PROXY, "probe", "--format", "json", *args], capture_output=True)
    assert run.returncode == 2
    document = orjson.loads(run.stdout)
    assert document["checks"] == [] and document["error"]
    assert document["error"] in run.stderr.decode()
    run = subprocess.run([*PROXY, "probe", "--format", "junit", *args], capture_output=True)
    assert run.returncode == 2
    suite = ET.fromstring(run.stdout).find("testsuite")
    assert suite is not None and suite.get("errors") == "1"
    error = suite.find("testcase/error")
    assert error is not None and (error.get("message") or "-") in run.stderr.decode()


def test_results_stream_as_each_check_ends(tmp_path):
    """Against an agent whose turn waits for a gate the test opens: the lines of the
    checks before the turn are out while the turn is still unanswered (the recording holds
    no stop reason yet); then the gate opens and the probe ends."""
    gate, record = tmp_path / "gate", tmp_path / "rec.jsonl"
    command = [*PROXY, "probe", "--record", str(record), "--only",
               "handshake,session-new,prompt", "--", *PROBE_AGENT, "gate", str(gate)]  # fmt: skip
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=clean_env()
    ) as proc:
        assert proc.stdout is not None
        seen: list[bytes] = []
        while not any(line.split()[1:2] == [b"session-new"] for line in seen):
            ready, _, _ = select.select([proc.stdout], [], [], 90)
            assert ready, seen  # (bounded: the agent gives up waiting after a minute)
            line = proc.stdout.readline()
            assert line, seen
            seen.append(line)
        assert b'"stopReason"' not in record.read_bytes()  # the turn is still waiting
        assert seen[0].startswith(b'acp-proxy probe: "probe-agent 1.0"')
        gate.touch()
        rest = proc.stdout.read()
        proc.wait(60)
    assert proc.returncode == 0, (seen, rest)
    assert b"  pass  prompt" in rest and b"3 checks: 3 passed" in rest


def test_the_conformance_table_is_made_of_probe_reports(tmp_path):
    """tests/conformance_table.py: a row per check (those with the same verdicts together),
    a column per agent report (here two agents of the tests stand in for two of the table's),
    the suites that check it too marked."""
    from tests.conformance_table import main

    for agent, bug in (("claude-agent-acp", "terminal-auth"), ("codex-acp", "good")):
        run = probe(tmp_path, [*PROBE_AGENT, bug], "--format", "json",
                    "--only", "handshake,session-new")  # fmt: skip
        (tmp_path / f"{agent}.json").write_text(run.stdout)
    rows = subprocess.run(
        [sys.executable, str(HERE / "conformance_table.py"), str(tmp_path)],
        capture_output=True, text=True, check=True,
    ).stdout.splitlines()  # fmt: skip
    assert rows[0] == "| checks | claude | codex |"
    assert rows[2] == "| `handshake`¹ | **✗** | ✓ |"
    assert rows[3] == "| `session-new`¹ | ✓ | ✓ |" and rows[4] == ""
    # below: each failure by its rule and the sentence it breaks
    assert rows[5:] == [
        "- **✗** claude `handshake`: `capability-auth-terminal`, v1 Authentication "
        '(Authentication Method Types); v1 schema (AuthMethodTerminal): "Agents MUST '
        "advertise this method only when the client enabled its terminal authentication "
        'capability"'
    ]
    assert main([str(tmp_path / "nothing")]) == 1


def test_a_session_loaded_only_on_a_new_connection_passes(tmp_path):
    """An agent that will not load a session still open, and offers no session/close: the
    probe starts it again and loads the session there (recorded beside, as *-load.jsonl)."""
    kept = tmp_path / "sessions"
    kept.mkdir()
    status, found, _ = checks(tmp_path, [*PROBE_AGENT, "load-anew", str(kept)],
                              "--only", "session-load")  # fmt: skip
    load = found["session-load"]
    assert status == 0 and load["status"] == "pass", load
    assert (
        "(on a new connection: the open session's load answered with error -32602"
        in (load["reason"])
    )
    assert load["reason"].startswith("replayed ") and not load["reason"].startswith("replayed 0")
    again = tmp_path / "rec-load.jsonl"
    assert any(str(again) in note for note in load["notes"]), load["notes"]
    methods = [f["msg"].get("method") for f in _frames(again) if f["from"] == "client"]
    assert methods[:2] == ["initialize", "session/load"]


def test_a_load_failed_on_a_new_connection_too_points_at_this_recordings_frame(tmp_path):
    """Gemini CLI's bug: every session/load answered -32603, on a new connection too. The
    check fails, and where to look is a frame of the recording it names (the open session's
    load answered with the error), not a seq of the new connection's recording."""
    status, found, _ = checks(tmp_path, [*PROBE_AGENT, "load-lost"], "--only", "session-load")
    load = found["session-load"]
    assert status == 1 and load["status"] == "fail", load
    assert load["reason"] == (
        "session/load answered with error -32603: Internal error; on a new connection, "
        "with error -32603: Internal error"
    )
    record = tmp_path / "rec.jsonl"
    assert load["see"][0] == f"acp-proxy show --seq {load['seq']} {record}"
    frames = {f["seq"]: f for f in _frames(record)}
    (asked,) = [f for f in frames.values() if f["msg"].get("method") == "session/load"]
    answer = frames[load["seq"]]
    assert answer["from"] == "agent" and answer["msg"]["id"] == asked["msg"]["id"]
    assert answer["msg"]["error"]["code"] == -32603


@pytest.mark.parametrize(
    ("bug", "check", "reason"),
    [
        ("bad-params", "invalid-params", "session/new with a cwd that is a number was answered "
         "with a result, not an error (acpx's suite wants -32602 Invalid params)"),
        ("other-code", "invalid-params", "not each -32602 Invalid params"),
        ("any-session", "unknown-session", "session/prompt for a session the probe made up "
         "(acp-proxy-probe-no-such-session) was answered with a turn (stop reason end_turn), "
         "not an error: acpx's suite wants an error; no ACP sentence requires one"),
    ],
)  # fmt: skip
def test_what_no_must_requires_is_a_warning_not_a_failure(tmp_path, bug, check, reason):
    """A peer suite's stricter rule (acpx's) or JSON-RPC's suggested code: said as a
    warning, with its basis and where to look; exit 0, 1 only with --strict. What the
    agent answered to the probe's made-up requests is no error of its in the recording."""
    status, found, document = checks(tmp_path, [*PROBE_AGENT, bug])
    outcome = found[check]
    assert status == 0 and outcome["status"] == "warn", outcome
    assert reason in outcome["reason"] and outcome["level"] == "SHOULD"
    assert "acpx" in outcome["basis"]
    record = tmp_path / "rec.jsonl"
    assert outcome["see"][0] == f"acp-proxy show --seq {outcome['seq']} {record}"
    assert document["summary"]["warn"] == 1 and document["summary"]["fail"] == 0
    assert {n for n, c in found.items() if c["status"] == "fail"} == set()
    assert agents_errors(record) == []
    run = probe(tmp_path, [*PROBE_AGENT, bug], "--only", check)
    assert run.returncode == 0
    assert f"  warn  {check}" in run.stdout and "basis: acpx" in run.stdout
    assert "1 warning" in run.stdout.splitlines()[-2]
    strict = probe(tmp_path, [*PROBE_AGENT, bug], "--only", check, "--strict")
    assert strict.returncode == 1 and "(--strict: warnings fail)" in strict.stdout
    run = probe(tmp_path, [*PROBE_AGENT, bug], "--only", check, "--format", "junit")
    assert run.returncode == 0
    case = next(c for c in ET.fromstring(run.stdout).iter("testcase") if c.get("name") == check)
    assert case.find("failure") is None and case.find("skipped") is None
    prop = case.find("properties/property")
    assert (
        prop is not None and prop.get("name") == "warning" and reason in (prop.get("value") or "")
    )
    run = probe(tmp_path, [*PROBE_AGENT, bug], "--only", check, "--format", "junit", "--strict")
    case = next(c for c in ET.fromstring(run.stdout).iter("testcase") if c.get("name") == check)
    assert run.returncode == 1 and case.find("failure") is not None


def test_an_agent_that_never_answers_a_prompt_fails_once_and_fast(tmp_path):
    """Fail fast: the first prompt turn unanswered, every later check that sends a prompt
    is skipped naming it (the malformed prompt and the made-up session's included); the
    probe ends well within its bounds."""
    import time

    began = time.monotonic()
    status, found, _ = checks(tmp_path, [*PROBE_AGENT, "endless"], "--timeout", "3")
    took = time.monotonic() - began
    assert status == 1 and took < 20, took
    assert {n for n, c in found.items() if c["status"] == "fail"} == {"prompt"}, found
    for name in ("resource-link", "empty-prompt", "cancel", "prompt-after-cancel",
                 "invalid-params", "unknown-session", "permission", "session-load"):  # fmt: skip
        if name in found:
            assert found[name]["status"] == "skip", found[name]
            assert found[name]["reason"].startswith("the prompt check failed"), found[name]
    text = probe(tmp_path, [*PROBE_AGENT, "endless"], "--timeout", "3").stdout
    assert text.count("did not end within 3s") == 1, text


def test_only_cancel_idle_cites_only_what_came_after_the_cancel(tmp_path):
    """--only cancel-idle against the example agent: the responses before the cancel
    (initialize's, session/new's) are no answer to it."""
    status, found, _ = checks(tmp_path, EXAMPLE, "--only", "cancel-idle")
    assert status == 0 and found["cancel-idle"]["status"] == "pass", found
    status, found, _ = checks(tmp_path, [*PROBE_AGENT, "answer-cancel"], "--only", "cancel-idle")
    assert status == 1 and found["cancel-idle"]["seq"] > found["cancel-idle"]["seqs"][0]


def test_a_session_id_that_is_not_a_string_is_said_as_it_is(tmp_path):
    _, found, _ = checks(tmp_path, [*PROBE_AGENT, "int-id"], "--only", "session-new")
    assert found["session-new"]["reason"] == "session/new answered sessionId 7, not a string"


def test_a_check_is_said_once_and_late_findings_only_add_theirs(tmp_path):
    """A finding that comes after its check ended (the agent's stdout noise, the end's) adds
    its own lines, once: the check is not printed again."""
    run = probe(tmp_path, [*EXAMPLE, "--misbehave"], "--protocol", "2")
    assert "again" not in run.stdout
    names = [line.split()[1] for line in run.stdout.splitlines()
             if line.startswith("  ") and line.split()[:1] in (["pass"], ["fail"], ["skip"])]  # fmt: skip
    assert len(names) == len(set(names)), run.stdout


def test_each_check_is_registered_with_its_basis_level_and_needs():
    """One object per check (its name, basis, level, needs and code), registered by the
    decorator: the catalog and the run order are the registrations'; a name twice or a need
    unknown is refused."""
    from acp_proxy.drive.probe import CHECKS, MUST, SHOULD, check
    from acp_proxy.drive.probe.catalog import REGISTRY, needed

    assert [c.name for c in CHECKS][:3] == ["handshake", "authenticate", "session-new"]
    assert all(c.body is not None and c.basis and c.level in (MUST, SHOULD) for c in CHECKS)
    assert {c.name for c in CHECKS if c.level == SHOULD} == {"invalid-params", "unknown-session"}
    assert needed(["lifecycle"]) == {"prompt", "session-new", "authenticate", "handshake"}
    for name, needs in (("prompt", ()), ("x", ("nothing",))):
        with pytest.raises(ValueError):
            check(name, spec="s", what="w", basis="b", needs=needs)(
                lambda run: "")  # fmt: skip
    assert len(REGISTRY) == len(CHECKS)


def test_the_modules_of_the_probe_stay_small():
    """No module over 1,000 lines, no class over 600."""
    import ast

    from tests.conftest import ROOT

    for path in (ROOT / "acp_proxy" / "drive" / "probe").glob("*.py"):
        text = path.read_text()
        assert text.count("\n") <= 1000, path
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef):
                assert (node.end_lineno or 0) - node.lineno < 600, (path, node.name)


def test_what_the_probe_provoked_is_no_error_in_ls_or_the_report(tmp_path):
    """An agent that runs a turn for the session the probe made up: validate, ls and the
    report say those frames' findings as the probe's doing (info), and ls marks the
    session as the probe's."""
    status, found, _ = checks(tmp_path, [*PROBE_AGENT, "any-session"])
    assert status == 0 and found["unknown-session"]["status"] == "warn"
    record = tmp_path / "rec.jsonl"
    marks = own_seqs(record)
    seqs = found["unknown-session"]["seqs"]
    assert set(range(seqs[0], seqs[1] + 1)) <= marks  # the request and every answer
    lines = [orjson.loads(line) for line in record.read_bytes().splitlines()]
    provoked = {line["seq"]: line["provoked"] for line in lines if line["kind"] == "probe"}
    assert provoked[seqs[0]] == "request" and provoked[seqs[1]] == "answer"
    assert agents_errors(record) == []
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    listed = invoke("ls", "--format", "json", str(record), env=env)
    (session,) = [orjson.loads(line) for line in listed.stdout.splitlines()]
    assert session["by"] == "probe" and session["errors"] == 0 and session["infos"] > 0
    text = invoke("ls", str(record), env=env).stdout.decode()
    assert '"probe-agent 1.0" [probe]' in text or "probe-agent 1.0 [probe]" in text
    page = tmp_path / "report.html"
    assert invoke("report", "-o", str(page), str(record)).returncode == 0
    html = page.read_text()
    assert '"level":"error"' not in html and "provoked by the probe" in html


#: The official Python SDK (PyPI ``agent-client-protocol``), pinned: its example agents.
PYTHON_SDK = "0.12.1"


@pytest.fixture(scope="module")
def python_sdk_examples() -> tuple[Path, Path]:
    """A venv with the pinned Python SDK and its sdist's ``examples/`` (the wheel ships
    none), made once in the user's cache directory (one at a time: a lock beside it; the
    client tests of test_production_agents.py use it too); skipped when PyPI cannot be
    reached."""
    import fcntl

    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    home = cache / "acp-proxy-tests" / f"python-sdk-{PYTHON_SDK}"
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(f"{home}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _python_sdk(home)


def _python_sdk(home: Path) -> tuple[Path, Path]:
    """:func:`python_sdk_examples`' venv and examples in ``home``, made if not there."""
    import shutil
    import tarfile

    python, examples = home / "venv" / "bin" / "python", home / "examples"
    if not (python.exists() and (examples / "echo_agent.py").exists()):
        shutil.rmtree(home, ignore_errors=True)
        home.mkdir(parents=True)
        subprocess.run([sys.executable, "-m", "venv", str(home / "venv")], check=True)
        pip = [str(python), "-m", "pip", "-q", "--disable-pip-version-check"]
        package = f"agent-client-protocol=={PYTHON_SDK}"
        installed = subprocess.run([*pip, "install", package], capture_output=True, timeout=600)
        fetched = subprocess.run(
            [*pip, "download", "--no-deps", "--no-binary", ":all:", "-d", str(home), package],
            capture_output=True, timeout=600,
        )  # fmt: skip
        if installed.returncode or fetched.returncode:
            shutil.rmtree(home, ignore_errors=True)
            pytest.skip(f"cannot install {package} from PyPI")
        (sdist,) = home.glob("*.tar.gz")
        with tarfile.open(sdist) as tar:
            for member in tar.getmembers():
                if "/examples/" in member.name and member.name.endswith(".py"):
                    member.name = member.name.split("/examples/", 1)[1]
                    tar.extract(member, examples, filter="data")
    return python, examples


@pytest.mark.parametrize("example", ["agent.py", "echo_agent.py"])
def test_the_python_sdks_example_agents_answer_a_made_up_session_with_a_warning(
    tmp_path, python_sdk_examples, example
):
    """They run a turn for the session the probe made up: no ACP sentence makes that their
    error, so a warning (acpx's rule), exit 0; the recording holds no error of theirs."""
    python, examples = python_sdk_examples
    status, found, document = checks(
        tmp_path, [str(python), str(examples / example)], "--timeout", "20"
    )
    failed = {n: c["reason"] for n, c in found.items() if c["status"] == "fail"}
    assert status == 0 and failed == {}, failed
    assert found["unknown-session"]["status"] == "warn"
    assert "answered with a turn" in found["unknown-session"]["reason"]
    assert agents_errors(Path(document["recording"])) == []


@pytest.mark.parametrize(
    ("client", "agent", "tag"),
    [
        (b"acp-proxy", b"probe-agent", "chat"),  # (chat's client core gives its bare name)
        (b"acp-proxy chat", b"probe-agent", "chat"),
        (b"zed", b"acp-proxy test-agent", "test-agent"),
        (b"zed", b"probe-agent", None),
    ],
)
def test_ls_tags_the_sessions_acp_proxy_played_a_side_of(tmp_path, client, agent, tag):
    """By the name given in initialize: the client's (probe, chat), or the agent's
    (test-agent); an editor's session with another agent is not tagged."""
    checks(tmp_path, PROBE_AGENT, "--only", "handshake")
    record = tmp_path / "rec.jsonl"
    data = record.read_bytes().replace(b'"name":"acp-proxy probe"', b'"name":"' + client + b'"')
    data = re.sub(rb'"name": ?"probe-agent"', b'"name":"' + agent + b'"', data)
    record.write_bytes(data)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    listed = invoke("ls", "--format", "json", str(record), env=env)
    (session,) = [orjson.loads(line) for line in listed.stdout.splitlines()]
    assert session["by"] == tag


def test_what_the_probe_provoked_is_said_under_a_check_only_when_it_did_not_pass(tmp_path):
    """Under a passing invalid-params, the text has no line of what the probe provoked (its
    malformed requests and their findings: the JSON and the recording keep them); under a
    warning (an agent that accepts a malformed session/new), they are said, as where to look."""
    passed = probe(tmp_path, PROBE_AGENT, "--only", "invalid-params")
    assert passed.returncode == 0, passed.stdout
    block = passed.stdout.split("invalid-params", 1)[1].split("\n  ", 1)[0]
    assert "provoked by the probe" not in passed.stdout and "note:" not in block
    _, found, _ = checks(tmp_path, PROBE_AGENT, "--only", "invalid-params")
    assert found["invalid-params"]["status"] == "pass"
    assert any("the probe's own malformed" in note for note in found["invalid-params"]["notes"])
    warned = probe(tmp_path, [*PROBE_AGENT, "bad-params"], "--only", "invalid-params")
    assert "warn  invalid-params" in warned.stdout, warned.stdout
    assert "note: seq " in warned.stdout and "the probe's own malformed" in warned.stdout


def test_on_a_terminal_the_check_that_waits_is_said_while_it_runs(tmp_path):
    """stdout and stderr a terminal: while a check waits (a turn that never ends, up to
    --timeout), the terminal's last line names it (`....  prompt  running`), erased before
    the check's own lines (walkthrough 5 #46); through a pipe no such line."""
    import os
    import pty

    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [*PROXY, "probe", "--no-record", "--timeout", "2", "--only", "prompt", "--",
         *PROBE_AGENT, "endless"],
        stdin=subprocess.DEVNULL, stdout=slave, stderr=slave, env=clean_env(TERM="xterm"),
    )  # fmt: skip
    os.close(slave)
    seen = b""
    while True:
        try:
            piece = os.read(master, 65536)
        except OSError:  # (the terminal closed: the probe ended)
            break
        if not piece:
            break
        seen += piece
    os.close(master)
    assert proc.wait(60) == 1
    text = seen.decode(errors="replace")
    running = text.index("prompt               running")
    assert "\r\x1b[K" in text[running:]  # erased
    failed = text.index("fail")
    assert running < failed
    piped = probe(tmp_path, [*PROBE_AGENT, "endless"], "--timeout", "2", "--only", "prompt")
    assert "  ....  " not in piped.stdout + piped.stderr and "\x1b[K" not in piped.stderr


def test_probe_takes_redact_and_addon_as_run_does(tmp_path):
    """probe --redact records its prompt's key as a tag; --addon hands the session to the
    user's addon (its print on stderr, never in the report on stdout)."""
    from tests.drive.test_chat import COUNTING_ADDON, SECRET

    addon = tmp_path / "counts.py"
    addon.write_text(COUNTING_ADDON)
    run = probe(tmp_path, EXAMPLE, "--only", "prompt", "--prompt", f"use {SECRET}", "--redact",
                "--addon", str(addon), "--format", "json")  # fmt: skip
    assert run.returncode == 0, run.stderr
    orjson.loads(run.stdout)  # (the report alone on stdout)
    recorded = (tmp_path / "rec.jsonl").read_text()
    assert SECRET not in recorded and "[redacted:" in recorded
    assert any(line.startswith("addon saw ") for line in run.stderr.splitlines()), run.stderr
