"""``acp-proxy probe``, driven for real: the example agent, agents with one bug each, and a
hostile one, each checked through the CLI."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import HERE, PROXY, SCRIPTED_AGENT, clean_env

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


V1_SKIPS = {"authenticate", "session-load", "session-list", "session-resume", "session-fork",
            "set-config-option", "session-close"}  # fmt: skip


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
    validated = subprocess.run([*PROXY, "validate", str(recording)], capture_output=True)
    assert validated.returncode == 0, validated.stdout


def test_a_misbehaving_example_agent_fails_the_checks_it_breaks(tmp_path):
    status, found, _ = checks(tmp_path, [*EXAMPLE, "--misbehave"], "--protocol", "2")
    assert status == 1
    failed = {name for name, check in found.items() if check["status"] == "fail"}
    assert failed == {"prompt", "cancel", "stdout"}
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
    assert others == set(), found


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
    validate = subprocess.run(
        [*PROXY, "validate", str(tmp_path / "rec.jsonl")], capture_output=True
    )
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
    assert "  skip  stdout             the agent wrote nothing on stdout" in lines
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
    assert len(cases) == 14 and suite.get("tests") == "14"
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
    assert len(lines) == 14
    assert lines[0].startswith("handshake") and lines[0].endswith("(Initialization)")
    assert any(
        "(Prompt Turn (Cancellation); v2 Prompt Lifecycle (Cancellation))" in x for x in lines
    )


def test_the_list_in_json_has_an_object_per_check():
    run = subprocess.run([*PROXY, "probe", "--list", "--format", "json"], capture_output=True)
    assert run.returncode == 0
    listed = orjson.loads(run.stdout)
    assert [c["name"] for c in listed][:2] == ["handshake", "authenticate"] and len(listed) == 14
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
    from acp_proxy.drive.probe import CHECKS, FAIL, SKIP, Outcome, _attribute

    by_name = {check.name: check for check in CHECKS}
    ran = Outcome(by_name["cancel"], SKIP, "the turn ended before it could be cancelled", (5, 9))
    idle = Outcome(by_name["session-fork"], SKIP, "not advertised")
    error = Violation("prompt-result-message-id", "error", "no messageId", "spec", 8)
    warning = Violation("stop-reason-unknown", "warning", "unknown", "spec", 9)
    _attribute([ran, idle], [warning])
    assert ran.status == SKIP and ran.findings == [warning]
    _attribute([ran, idle], [error])
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
    """Its prompt never answered, the next turn runs in a new session; the permission check
    says why it has nothing to check."""
    _, found, _ = checks(tmp_path, [*PROBE_AGENT, "endless"], "--timeout", "1")
    assert found["prompt"]["reason"].startswith("the turn did not end within 1s (--timeout); ")
    assert "its prompt was not answered within 1s of session/cancel" in found["prompt"]["reason"]
    assert found["cancel"]["status"] == "fail"
    rules = {f["rule"] for c in found.values() for f in c["findings"]}
    assert not rules & {"prompt-overlap", "cancelled-without-cancel"}, found
    prompts = [
        f["msg"]["params"]["sessionId"]
        for f in _frames(tmp_path / "rec.jsonl")
        if f["msg"].get("method") == "session/prompt"
    ]
    assert len(prompts) == 2 and len(set(prompts)) == 2
    assert found["permission"]["status"] == "skip"
    assert found["permission"]["reason"] == "no turn ended (the prompt and cancel checks failed)"


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
        "answered protocolVersion 99; the probe asked for 1, so the agent may answer 1"
    )
    _, found, _ = checks(tmp_path, [*PROBE_AGENT, "wrong-version"], "--protocol", "2")
    assert found["handshake"]["reason"].endswith("asked for 2, so the agent may answer 1 or 2")


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
