"""``acp-proxy chat``, driven for real: prompts piped to the example agent, a session on a
pseudo-terminal (a permission answered, a turn cancelled with Ctrl-C, /quit), and a hostile
agent whose escapes must not reach the terminal raw."""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import select
import subprocess
import sys
import termios
import time
from pathlib import Path

import orjson
import pytest

from acp_proxy.drive.words import command_words
from tests.conftest import HERE, PROXY, SCRIPTED_AGENT, clean_env, invoke

EXAMPLE = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", "0"]
PROBE_AGENT = [sys.executable, str(HERE / "probe_agent.py")]
REPLY = "This is the example agent that ships with acp-proxy."


def chat(
    tmp_path: Path, agent: list[str], stdin: str, *options: str
) -> subprocess.CompletedProcess[str]:
    command = [*PROXY, "chat", "--record", str(tmp_path / "rec.jsonl"), *options, "--", *agent]
    return subprocess.run(
        command, input=stdin, capture_output=True, text=True, timeout=120, env=clean_env(),
        cwd=tmp_path,
    )  # fmt: skip


def frames(recording: Path) -> list[dict[str, object]]:
    records = [orjson.loads(line) for line in recording.read_bytes().splitlines()]
    return [r["msg"] for r in records if r.get("kind") == "frame" and "msg" in r]


@pytest.mark.parametrize("protocol", ["1", "2"])
def test_piped_prompts_get_the_reply_on_stdout_and_a_clean_recording(tmp_path, protocol):
    run = chat(tmp_path, EXAMPLE, "hello\n\nagain\n", "--protocol", protocol)
    assert run.returncode == 0, run.stderr
    # the agent's text, a line a turn, and nothing else (no thought, plan, tool, label)
    assert run.stdout.splitlines() == [run.stdout.splitlines()[0]] * 2
    assert run.stdout.startswith(REPLY)
    assert "rec.jsonl" in run.stderr.splitlines()[-1]
    validated = invoke("validate", str(tmp_path / "rec.jsonl"))
    assert validated.returncode == 0, validated.stdout
    prompts = [f for f in frames(tmp_path / "rec.jsonl") if f.get("method") == "session/prompt"]
    assert [p["params"]["prompt"][0]["text"] for p in prompts] == ["hello", "again"]  # type: ignore[index]


def test_piped_a_finding_at_error_level_is_exit_1_and_said_on_stderr(tmp_path):
    run = chat(tmp_path, [*EXAMPLE, "--misbehave"], "hello\n", "--protocol", "2")
    assert run.returncode == 1
    assert run.stdout.startswith(REPLY)
    assert "error prompt-result-message-id" in run.stderr


@pytest.mark.parametrize("run_number", range(3))  # (a race: lost in about half the runs)
def test_piped_a_finding_before_initialize_counts_and_is_said(tmp_path, run_number):
    banner = ["sh", "-c", f"echo hello; exec {sys.executable} -m acp_proxy.devtools.example_agent"]
    run = chat(tmp_path, banner, "hi\n")
    assert run.returncode == 1, run.stderr
    # (seq 1 or 2: the banner and the client's initialize cross; either way it is said)
    said = 'error not-json: the agent sent a line that is not JSON: "hello" (seq '
    assert said + "1)" in run.stderr or said + "2)" in run.stderr, run.stderr


def test_an_agent_that_exits_is_one_line_with_its_status_and_stderr(tmp_path):
    run = chat(tmp_path, [*PROBE_AGENT, "exit-now"], "hello\n")
    assert run.returncode == 1
    gone = [line for line in run.stderr.splitlines() if "status 3" in line]
    assert gone == [
        "acp-proxy chat: the agent exited with status 3; its stderr ended: probe agent: "
        "cannot find my model, giving up"
    ]
    assert run.stderr.splitlines()[-1] == f"acp-proxy chat: recording: {tmp_path / 'rec.jsonl'}"
    assert "Traceback" not in run.stderr and run.stdout == ""


def test_an_agent_that_hangs_is_bounded_by_the_timeout(tmp_path):
    run = chat(tmp_path, [*PROBE_AGENT, "hang-init"], "hello\n", "--timeout", "1")
    assert run.returncode == 1
    assert "no response to initialize within 1s (--timeout); the agent is stopped" in run.stderr
    assert "Traceback" not in run.stderr


def test_an_agent_killed_at_the_end_is_said_in_english(tmp_path):
    """An agent that ignores its stdin's end is signalled; the last line says so."""
    agent = ["sh", "-c", "echo starting >&2; exec sleep 60"]
    run = chat(tmp_path, agent, "hello\n", "--timeout", "0.5", "--grace", "0.2")
    assert run.returncode == 1
    lines = run.stderr.splitlines()
    assert lines[0] == (
        "acp-proxy chat: no response to initialize within 0.5s (--timeout); the agent is "
        "stopped; its stderr ended: starting"
    )
    assert lines[-1].startswith("acp-proxy chat: the agent ended (killed by SIGTERM); recording: ")
    assert "signalling its process group" not in run.stderr  # the proxy's work, said above


#: An agent that gives no agentInfo, and ends each turn at once.
NAMELESS = [
    sys.executable,
    "-c",
    """
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    result = {"initialize": {"protocolVersion": 1}, "session/new": {"sessionId": "s1"},
              "session/prompt": {"stopReason": "end_turn"}}.get(request.get("method"))
    if result is not None:
        print(json.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}), flush=True)
""",
]


#: A v2 agent whose turn ends idle with an error.
IDLE_WITH_AN_ERROR = [
    sys.executable,
    "-c",
    """
import json, sys
def send(message):
    print(json.dumps({"jsonrpc": "2.0", **message}), flush=True)
def update(body):
    send({"method": "session/update", "params": {"sessionId": "s1", "update": body}})
for line in sys.stdin:
    request = json.loads(line)
    method, ident = request.get("method"), request.get("id")
    if method == "initialize":
        send({"id": ident, "result": {"protocolVersion": 2}})
    elif method == "session/new":
        send({"id": ident, "result": {"sessionId": "s1"}})
    elif method == "session/prompt":
        update({"sessionUpdate": "state_update", "state": "running"})
        send({"id": ident, "result": {"messageId": "m1"}})
        update({"sessionUpdate": "state_update", "state": "idle",
                "error": {"code": -32603, "message": "model overloaded"}})
""",
]


def test_a_v2_turn_that_ends_with_an_error_says_it_in_words(tmp_path):
    run = chat(tmp_path, IDLE_WITH_AN_ERROR, "hello\n", "--protocol", "2")
    assert run.returncode == 1
    assert "the turn ended with an error: error -32603: model overloaded\n" in run.stderr


def test_an_agent_that_gives_no_name_is_named_by_its_command(tmp_path):
    run = chat(tmp_path, NAMELESS, "hello\n")
    assert run.returncode == 0, run.stderr
    header = run.stderr.splitlines()[0]
    assert header == (
        f"acp-proxy chat: {command_words(NAMELESS)}, protocol 1, session s1 in {tmp_path}"
        f"; recording: {tmp_path / 'rec.jsonl'}"  # (up front, to follow it in another pane)
    )
    assert header.startswith(f"acp-proxy chat: {sys.executable} -c ") and "…" in header


def test_session_resumes_where_the_agent_can_and_says_why_not(tmp_path):
    run = chat(tmp_path, EXAMPLE, "hello\n", "--protocol", "2", "--session", "sess_9")
    assert run.returncode == 1 and run.stdout == ""
    assert "session/resume failed: error -32002: Resource not found: session sess_9" in run.stderr
    sent = frames(tmp_path / "rec.jsonl")
    assert not any(f.get("method") == "session/prompt" for f in sent)
    run = chat(tmp_path, EXAMPLE, "hello\n", "--session", "sess_9")  # v1: it can do neither
    assert run.returncode == 1 and "can neither load nor resume" in run.stderr


#: An agent that opens a session, then says nothing more in a turn (nor ends it).
SILENT_IN_A_TURN = [
    sys.executable,
    "-c",
    """
import json, sys
for line in sys.stdin:
    request = json.loads(line)
    result = {"initialize": {"protocolVersion": 1}, "session/new": {"sessionId": "s1"}}
    if request.get("method") in result:
        print(json.dumps({"jsonrpc": "2.0", "id": request["id"],
                          "result": result[request["method"]]}), flush=True)
    if request.get("method") == "session/cancel":
        print("cancel ignored", file=sys.stderr, flush=True)
""",
]


def test_a_turn_that_goes_silent_is_cancelled_then_given_up(tmp_path):
    run = chat(tmp_path, SILENT_IN_A_TURN, "hello\nagain\n", "--timeout", "1")
    assert run.returncode == 1 and run.stdout == ""
    assert "no message from the agent within 1s (--timeout): session/cancel sent" in run.stderr
    gone = [line for line in run.stderr.splitlines() if "no end of the turn within 1s" in line]
    assert len(gone) == 1 and "its stderr ended: cancel ignored" in gone[0]
    sent = frames(tmp_path / "rec.jsonl")
    assert [f.get("method") for f in sent if "method" in f][-2:] == [
        "session/prompt",
        "session/cancel",
    ]  # (the second prompt is never sent)


def test_piped_a_permission_refused_by_the_policy_is_said(tmp_path):
    """`--permissions reject` (the default) refuses the agent's read: stderr says what was
    refused and how to grant it (before: the tool call failed, and nothing said why)."""
    (tmp_path / "README.md").write_text("# a readme\n")
    run = chat(tmp_path, EXAMPLE, "summarize the readme\n")
    assert (
        "acp-proxy chat: permission refused: Read README.md (read) (--permissions allow grants it)"
        in (run.stderr.splitlines())
    ), run.stderr
    allowed = chat(tmp_path, EXAMPLE, "summarize the readme\n", "--permissions", "allow")
    assert "permission refused" not in allowed.stderr


def test_permissions_is_for_a_pipe_and_an_agent_is_needed(tmp_path):
    run = chat(tmp_path, [], "")
    assert run.returncode == 2
    assert run.stderr == (
        "acp-proxy chat: missing argument '-- AGENT [ARGS]...' (acp-proxy chat --help)\n"
    )
    run = chat(tmp_path, ["no-such-agent-here"], "")
    assert run.returncode == 2 and "not found" in run.stderr


class Terminal:
    """``acp-proxy chat`` on a pseudo-terminal it has as its controlling terminal, so that
    a typed Ctrl-C is the terminal's SIGINT to its foreground process group."""

    def __init__(self, command: list[str], cwd: Path, term: str = "dumb") -> None:
        self.leader, follower = pty.openpty()

        def controlling() -> None:
            os.setsid()
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        self.proc = subprocess.Popen(
            command, stdin=follower, stdout=follower, stderr=follower, cwd=cwd,
            env=clean_env(TERM=term),
            preexec_fn=controlling,  # noqa: PLW1509 - the test starts no thread
        )  # fmt: skip
        os.close(follower)
        self.seen = b""
        #: Where the next :meth:`until` looks from: past what it found last.
        self.mark = 0

    def type(self, data: bytes) -> None:
        os.write(self.leader, data)

    def paste(self, text: bytes) -> None:
        """``text`` pasted, as a terminal (tmux, xterm) does: marked (ESC [ 200 ~ ... ESC [
        201 ~) only while the program has asked for it (ESC [ ? 2004 h, until ... l)."""
        asked = self.seen.rfind(b"\x1b[?2004h") > self.seen.rfind(b"\x1b[?2004l")
        self.type(b"\x1b[200~" + text + b"\x1b[201~" if asked else text.replace(b"\n", b"\r"))

    def until(self, pattern: bytes, seconds: float = 60) -> bytes:
        """What the terminal showed, up to ``pattern`` (asserted to come after what was
        waited for before)."""
        end = time.monotonic() + seconds
        while pattern not in self.seen[self.mark :] and time.monotonic() < end:
            ready, _, _ = select.select([self.leader], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(self.leader, 1 << 16)
                except OSError:  # the other end closed
                    break
                self.seen += chunk
        assert pattern in self.seen[self.mark :], self.seen.decode("utf-8", "replace")[-3000:]
        self.mark = self.seen.index(pattern, self.mark) + len(pattern)
        return self.seen

    def close(self, seconds: float = 60) -> int:
        try:
            status = self.proc.wait(seconds)
        finally:
            self.proc.kill()
            with contextlib.suppress(OSError):
                while chunk := os.read(self.leader, 1 << 16):
                    self.seen += chunk
            os.close(self.leader)
        return status


def test_on_a_terminal_a_permission_is_asked_ctrl_c_cancels_and_quit_quits(tmp_path):
    (tmp_path / "README.md").write_text("# a readme\n")
    record = tmp_path / "rec.jsonl"
    agent = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", "0.3"]
    term = Terminal([*PROXY, "chat", "--record", str(record), "--", *agent], tmp_path)
    term.until(b"> ")
    term.type(b"summarize the readme\r")
    term.until(b"permission: Read README.md (read)")
    term.until(f"path: {tmp_path}/README.md".encode())  # what it touches, before the question
    term.until(b"y/n? ")
    term.type(b"y\r")
    term.until(b"completed")  # the tool call ran: the agent read the file, inside --cwd
    term.until(b"This is")  # the reply streams
    term.type(b"\x03")
    term.until(b"session/cancel sent")
    shown = term.until(b"ended: ")
    term.until(b"> ", seconds=30)
    term.type(b"/mode code\r")
    term.until(b"mode: code")  # (the agent's own update says it, once)
    term.until(b"> ")
    term.type(b"/quit\r")
    assert term.close() == 0
    text = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", shown).decode()
    assert "thought:" in text and "plan:" in text and "agent: This is" in text
    assert "ended: cancelled" in text
    sent = frames(record)
    assert any(f.get("method") == "session/cancel" for f in sent)
    ends = [f for f in sent if isinstance(f.get("result"), dict) and "stopReason" in f["result"]]  # type: ignore[operator]
    assert [f["result"]["stopReason"] for f in ends] == ["cancelled"]  # type: ignore[index]
    answers = [f for f in sent if isinstance(f.get("result"), dict) and "outcome" in f["result"]]  # type: ignore[operator]
    assert answers[0]["result"]["outcome"] == {"outcome": "selected", "optionId": "allow"}  # type: ignore[index]
    assert any(f.get("method") == "fs/read_text_file" for f in sent)
    assert any(f.get("method") == "session/set_mode" for f in sent)


def test_on_a_terminal_ctrl_c_twice_in_a_turn_quits(tmp_path):
    record = tmp_path / "rec.jsonl"
    agent = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", "0.3"]
    term = Terminal([*PROXY, "chat", "--record", str(record), "--", *agent], tmp_path)
    term.until(b"> ")
    term.type(b"hello\r")
    term.until(b"y/n? ")
    term.type(b"y\r")
    term.until(b"This is")
    term.type(b"\x03")
    time.sleep(0.05)
    term.type(b"\x03")
    assert term.close(30) == 130, term.seen.decode("utf-8", "replace")[-2000:]
    assert f"recording: {record}".encode() in term.seen
    assert orjson.loads(record.read_bytes().splitlines()[-1])["kind"] == "end"


@pytest.mark.parametrize(("keys", "status"), [(b"\x04", 0), (b"\x03", 130)])
def test_on_a_terminal_ctrl_d_quits_and_ctrl_c_twice_stops(tmp_path, keys, status):
    term = Terminal([*PROXY, "chat", "--record", str(tmp_path / "rec.jsonl"), "--", *EXAMPLE],
                    tmp_path)  # fmt: skip
    # (a SIGINT between readline's prompt and its wait for a key is seen at the next key:
    # CPython's readline; the Ctrl-C is typed once the prompt is waiting)
    term.until(b"> ")
    time.sleep(0.5)
    term.type(keys)
    if keys == b"\x03":
        term.until(b"Ctrl-C again")
        term.until(b"> ")
        time.sleep(0.5)
        term.type(keys)
    assert term.close() == status
    assert f"recording: {tmp_path / 'rec.jsonl'}".encode() in term.seen
    last = (tmp_path / "rec.jsonl").read_bytes().splitlines()[-1]
    assert orjson.loads(last)["kind"] == "end"


def test_on_a_terminal_a_command_used_wrong_says_its_usage(tmp_path):
    term = Terminal([*PROXY, "chat", "--no-record", "--", *EXAMPLE], tmp_path)
    term.until(b"> ")
    term.type(b"/config model\r")
    term.until(b"  usage: /config ID VALUE\r\n")
    term.until(b"> ")
    term.type(b"/bogus\r")
    term.until(b"  /bogus: not a command (/help lists them; //bogus sends it)\r\n")
    term.until(b"> ")
    term.type(b"/quit\r")
    assert term.close() == 0


def test_on_a_terminal_permissions_is_a_usage_error(tmp_path):
    """On a terminal the user is asked: --permissions would do nothing."""
    term = Terminal([*PROXY, "chat", "--permissions", "allow", "--", *EXAMPLE], tmp_path)
    term.until(b"--permissions has no effect")
    assert term.close() == 2


def test_a_hostile_agents_escapes_reach_the_terminal_escaped(tmp_path):
    term = Terminal([*PROXY, "chat", "--no-record", "--", *SCRIPTED_AGENT, "hostile"], tmp_path)
    term.until(b"> ")
    term.type(b"hi\r")
    term.until(b"ended: ", seconds=30)
    term.until(b"> ", seconds=30)
    term.type(b"/quit\r")
    term.close()
    shown = term.seen.decode("utf-8", "replace")
    for raw in ("\x1b]52", "\x1b]8", "\x9b", "\u202e", "\u200b", "\x7f", "\x00", "\rover"):
        assert raw not in shown, repr(raw)
    assert "\\x1b]52;c;aGk=" in shown and "\\u202e" in shown


def test_piped_the_agents_tabs_and_line_feeds_are_kept_other_controls_escaped(tmp_path):
    run = chat(tmp_path, [*PROBE_AGENT, "text-controls"], "hi\n")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "a\tb\nc\\x0dd\\x1b[31me\\u202ef\\x07 \n"


def test_piped_stdout_holds_only_the_chats_sessions_text(tmp_path):
    """Findings (on stderr) add nothing to stdout; another session's text is not the reply."""
    run = chat(tmp_path, [*PROBE_AGENT, "finding-chunks"], "hi\n", "--permissions", "allow")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "Hello from the probe agent. It streams slowly. \n"
    assert run.stderr.count("warning schema-lenient") == 3
    run = chat(tmp_path, [*PROBE_AGENT, "other-session"], "hi\n")
    assert run.stdout == ""
    assert "nobody" in run.stderr


def test_piped_late_text_is_a_note_on_stderr_not_part_of_the_next_reply(tmp_path):
    run = chat(tmp_path, [*PROBE_AGENT, "late-update"], "hi\nagain\n")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "Hello from the probe agent. It streams slowly. \n" * 2
    late = "acp-proxy chat: late text from the agent, after its turn ended: one more thing"
    assert run.stderr.splitlines().count(late) == 2, run.stderr


#: An agent silent in a turn, that ends it cancelled when asked to.
CANCELLED_WHEN_ASKED = [
    sys.executable,
    "-c",
    """
import json, sys
prompt = None
for line in sys.stdin:
    request = json.loads(line)
    method, ident = request.get("method"), request.get("id")
    result = {"initialize": {"protocolVersion": 1}, "session/new": {"sessionId": "s1"}}
    if method in result:
        print(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result[method]}), flush=True)
    elif method == "session/prompt":
        prompt = ident
    elif method == "session/cancel":
        print(json.dumps({"jsonrpc": "2.0", "id": prompt,
                          "result": {"stopReason": "cancelled"}}), flush=True)
""",
]


def test_piped_a_turn_cut_off_by_the_timeout_or_refused_fails_and_says_how(tmp_path):
    run = chat(tmp_path, CANCELLED_WHEN_ASKED, "hi\n", "--timeout", "1")
    assert run.returncode == 1, run.stderr
    assert "acp-proxy chat: ended: cancelled (--timeout)" in run.stderr.splitlines()
    run = chat(tmp_path, [*PROBE_AGENT, "stop", "refusal"], "hi\n")
    assert run.returncode == 1, run.stderr
    assert "acp-proxy chat: ended: refusal" in run.stderr.splitlines()
    for reason in ("max_tokens", "max_turn_requests"):
        run = chat(tmp_path, [*PROBE_AGENT, "stop", reason], "hi\n")
        assert run.returncode == 0, run.stderr
        assert f"acp-proxy chat: ended: {reason}" in run.stderr.splitlines()


@pytest.mark.parametrize(
    ("agent", "said"),
    [
        (["wrong-version"], "the agent answered protocolVersion 99; asked 1"),
        (["error-prompt"], "the prompt failed: error -32603: no model"),
    ],
)
def test_piped_every_line_on_stderr_is_the_chats(tmp_path, agent, said):
    run = chat(tmp_path, [*PROBE_AGENT, *agent], "hi\n")
    assert run.returncode == 1
    assert f"acp-proxy chat: {said}" in run.stderr.splitlines()
    assert all(line.startswith("acp-proxy chat: ") for line in run.stderr.splitlines())
    run = chat(tmp_path, EXAMPLE, "hello\n", "--protocol", "2", "--session", "sess_9")
    assert "acp-proxy chat: session/resume failed: " in run.stderr
    assert all(line.startswith("acp-proxy chat: ") for line in run.stderr.splitlines())


def plain(shown: bytes) -> str:
    """A terminal's output without its styling, and with its line ends as \\n."""
    return re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", shown).decode().replace("\r\n", "\n")


def test_on_a_terminal_late_text_is_marked_and_the_prompt_is_clean(tmp_path):
    term = Terminal([*PROXY, "chat", "--no-record", "--", *PROBE_AGENT, "late-update"], tmp_path)
    term.until(b"> ")
    term.type(b"hi\r")
    term.until(b"y/n? ")
    term.type(b"y\r")
    term.until(b"ended: ")
    shown = term.until(b"> ")
    term.type(b"/quit\r")
    assert term.close() == 0
    assert "\n  (late) agent: one more thing\n> " in plain(shown), plain(shown)


@pytest.mark.parametrize("run_number", range(2))  # (a race: lost in most runs)
def test_on_a_terminal_a_permission_is_asked_after_what_came_before_it(tmp_path, run_number):
    term = Terminal([*PROXY, "chat", "--no-record", "--", *PROBE_AGENT, "updates-first"],
                    tmp_path)  # fmt: skip
    term.until(b"> ")
    term.type(b"hi\r")
    shown = plain(term.until(b"y/n? "))
    term.type(b"y\r")
    term.until(b"ended: ")
    term.until(b"> ")
    term.type(b"/quit\r")
    assert term.close() == 0
    # (the request names the call by its id alone: the title is the call's, shown before it)
    asked = shown.index("permission: Look around (read)")
    assert -1 < shown.find("step 19") < asked and -1 < shown.find("Look around") < asked, shown


def replying(tmp_path: Path, delay: float) -> Terminal:
    """A chat with the example agent on a terminal, its reply to a prompt streaming (the
    permission allowed)."""
    agent = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", str(delay)]
    term = Terminal([*PROXY, "chat", "--no-record", "--", *agent], tmp_path)
    term.until(b"> ")
    term.type(b"hello\r")
    term.until(b"y/n? ")
    term.type(b"y\r")
    term.until(b"This is")
    return term


def test_on_a_terminal_what_is_typed_in_a_turn_is_not_echoed_and_ctrl_d_quits_after(tmp_path):
    term = replying(tmp_path, 0.15)
    term.type(b"zzz")
    shown = term.until(b"ended: ")
    term.until(b"> ")
    assert b"zzz" not in shown[shown.index(b"This is") :]
    term.until(b"zzz")  # kept for the prompt after the turn (readline echoes it there)
    term.type(b"\x15hello\r")  # (Ctrl-U: the line emptied)
    term.until(b"y/n? ")
    term.type(b"y\r")
    term.until(b"This is")
    term.type(b"\x04")
    term.until(b"ended: ")
    assert term.close(30) == 0, plain(term.seen)[-2000:]


def test_typed_at_a_terminal_with_stdout_redirected_the_file_gets_only_the_text(tmp_path):
    """`acp-proxy chat -- AGENT > replies.txt` typed at a terminal: the lines typed are the
    prompts, and the file holds the agent's text only (no prompt, no question drawn into
    it), as when piped; permissions by --permissions."""
    parent, child = pty.openpty()
    out = tmp_path / "replies.txt"
    with open(out, "wb") as replies:
        proc = subprocess.Popen(
            [*PROXY, "chat", "--no-record", "--permissions", "allow", "--", *PROBE_AGENT],
            stdin=child, stdout=replies, stderr=subprocess.PIPE, cwd=tmp_path,
        )  # fmt: skip
    os.close(child)
    try:
        os.write(parent, b"hi\n")
        time.sleep(3)
        os.write(parent, b"\x04")  # Ctrl-D: the end of the prompts
        _, stderr = proc.communicate(timeout=60)
    finally:
        os.close(parent)
    assert proc.returncode == 0, stderr.decode()
    assert out.read_text() == "Hello from the probe agent. It streams slowly. \n"


def test_on_a_terminal_what_was_typed_ahead_never_answers_a_permission(tmp_path):
    """A `y` typed ahead during a turn (meant for later) is dropped when the next turn's
    permission question is asked: only a key typed after the question answers it."""
    record = tmp_path / "rec.jsonl"
    term = Terminal([*PROXY, "chat", "--record", str(record), "--", *PROBE_AGENT], tmp_path)
    term.until(b"> ")
    term.type(b"hi\r")
    term.until(b"y/n? ")
    term.type(b"y\r")
    term.until(b"Hello")
    term.type(b"again\ry\r")  # the next prompt, and a `y` typed ahead of its question
    term.until(b"typed before this question waits for the next prompt")
    term.until(b"y/n? ")
    time.sleep(0.5)
    term.type(b"n\r")
    term.until(b"ended: ")
    term.until(b"> y")  # (kept: the next prompt's start, to send or to edit)
    term.type(b"\x15/quit\r")
    assert term.close() == 0, plain(term.seen)[-2000:]
    answers = [
        r["msg"]["result"]["outcome"]
        for r in map(orjson.loads, record.read_bytes().splitlines())
        if r.get("from") == "client" and "result" in r.get("msg", {})
        and "outcome" in r["msg"]["result"]
    ]  # fmt: skip
    assert answers == [
        {"outcome": "selected", "optionId": "yes"},
        {"outcome": "selected", "optionId": "no"},
    ], answers


def test_on_a_terminal_late_text_at_the_prompt_is_drawn_above_it_and_the_prompt_again(tmp_path):
    term = Terminal([*PROXY, "chat", "--no-record", "--", *PROBE_AGENT, "later-update"], tmp_path)
    term.until(b"> ")
    term.type(b"hi\r")
    term.until(b"y/n? ")
    term.type(b"y\r")
    term.until(b"ended: ")
    term.until(b"> ")
    term.type(b"ab")
    shown = term.until(b"one more thing")
    shown = term.until(b"> ab")
    term.type(b"\x15/quit\r")
    assert term.close() == 0
    # back to the prompt line's start, cleared with spaces (no ESC [ K: TERM=dumb here),
    # the late text, the prompt again as typed
    assert b"> ab\r    \r  (late)" in shown and b"\x1b[K" not in shown
    assert "> ab\r    \r  (late) agent: one more thing\n> ab" in plain(shown), plain(shown)


def test_a_permission_says_the_command_and_the_paths_it_touches():
    from acp_proxy.drive.chat.permissions import touches as _touches

    fields = {
        "rawInput": {"command": ["rm", "-rf", "build"]},
        "locations": [{"path": f"/w/{n}"} for n in range(5)] + [{"path": 7}, "x"],
    }
    assert _touches(fields) == [
        "command: rm -rf build", "path: /w/0", "path: /w/1", "path: /w/2", "(and 2 more paths)"
    ]  # fmt: skip
    assert _touches({"rawInput": "ls", "locations": None}) == []
    spaced = _touches({"rawInput": {"command": ["rm", "my dir"]}})
    assert spaced == ["command: rm 'my dir'"]  # one argument, as a shell reads it
    hidden = _touches({"rawInput": {"command": "ls" + " " * 300 + "; rm -rf ~" + "x" * 400}})
    assert hidden == [f"command: ls ; rm -rf ~{'x' * 287} … (113 more characters)"]


def test_on_a_terminal_ctrl_c_again_quits_though_the_turn_ended_between(tmp_path):
    """The cancel says "Ctrl-C again quits": so it does at the prompt just after, even when
    the turn ended before the second Ctrl-C."""
    term = replying(tmp_path, 0.3)
    term.type(b"\x03")
    term.until(b"Ctrl-C again quits")
    term.until(b"ended: ")
    term.until(b"> ")
    term.type(b"\x03")
    assert term.close() == 130
    assert b"Ctrl-C again, Ctrl-D or /quit" not in term.seen


HOSTILE = [sys.executable, str(HERE / "hostile_agent.py")]


def test_piped_a_turn_of_fifty_thousand_chunks_reaches_stdout_whole_and_in_order(tmp_path):
    """50,000 agent_message_chunk updates in one turn, piped: every chunk on stdout, in
    order (before: 13,618 of them, with gaps, exit 0: the client core dropped what waited
    past 10,000 in its queue)."""
    done = chat(tmp_path, [*HOSTILE, "chunks", "50000"], "go\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "".join(f"w{i} " for i in range(50_000)) + "\n"


def test_piped_a_huge_turn_read_slowly_stays_in_bounded_memory_and_loses_nothing(tmp_path):
    """300,000 chunks, chat's stdout read slowly: the chat holds back (the agent waits on
    its pipe) under 150 MiB, and every chunk comes out."""
    command = [*PROXY, "chat", "--no-record", "--", *HOSTILE, "chunks", "300000"]
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        env=clean_env(), cwd=tmp_path,
    ) as proc:  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b"go\n")
        proc.stdin.close()
        received = bytearray()
        peak = 0
        while chunk := proc.stdout.read1(4096):  # type: ignore[attr-defined]
            received += chunk
            with contextlib.suppress(OSError):
                status = Path(f"/proc/{proc.pid}/status").read_text()
                peak = max(peak, int(re.search(r"VmHWM:\s+(\d+)", status)[1]) // 1024)  # type: ignore[index]
            time.sleep(0.001)
        assert proc.wait(120) == 0
    words = received.decode().split()
    assert len(words) == 300_000 and words == [f"w{i}" for i in range(300_000)]
    assert 0 < peak < 150, f"peak {peak} MiB"


def test_on_a_terminal_a_permission_of_a_megabyte_is_shown_cut(tmp_path):
    """A permission request with 1 MB in its title, its command and its options: a few
    lines on the terminal, each cut with a mark (before: 4 MB written to it)."""
    term = Terminal([*PROXY, "chat", "--no-record", "--", *HOSTILE, "big-permission"], tmp_path)
    term.until(b"> ")
    term.type(b"go\r")
    shown = term.until(b"y/n? ")
    term.type(b"n\r")
    term.until(b"> ")
    term.type(b"/quit\r")
    assert term.close() == 0
    assert len(shown) < 10_000
    assert shown.count(b"more characters)") >= 3


def prompts_sent(recording: Path) -> list[str]:
    sent = [f for f in frames(recording) if f.get("method") == "session/prompt"]
    return [p["params"]["prompt"][0]["text"] for p in sent]  # type: ignore[index]


def test_prompt_is_one_turn_with_piped_stdin_after_it_or_stdin_the_prompt(tmp_path):
    """As `claude -p`, `codex exec`: `git diff | chat -p 'review this'` is ONE prompt, the
    instruction then stdin as a <stdin> block (before: stdin unread); `-p -` is stdin;
    an empty stdin adds nothing."""
    run = chat(tmp_path, EXAMPLE, "diff --git a/x b/x\n+new line\n", "-p", "review this")
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(REPLY) and run.stdout.count(REPLY) == 1
    assert prompts_sent(tmp_path / "rec.jsonl") == [
        "review this\n\n<stdin>\ndiff --git a/x b/x\n+new line\n</stdin>"
    ]
    whole = chat(tmp_path, EXAMPLE, "line one\n/new\nline three\n", "--prompt", "-")
    assert whole.returncode == 0, whole.stderr
    assert prompts_sent(tmp_path / "rec.jsonl")[-1] == "line one\n/new\nline three\n"
    assert chat(tmp_path, EXAMPLE, "", "-p", "hi there").returncode == 0
    assert prompts_sent(tmp_path / "rec.jsonl")[-1] == "hi there"  # (the same file, appended)
    empty = chat(tmp_path, EXAMPLE, " \n", "-p", "-")
    assert empty.returncode == 2 and "--prompt -: stdin is empty" in empty.stderr
    refused = chat(tmp_path, [*EXAMPLE, "--misbehave"], "", "--prompt", "hi", "--protocol", "2")
    assert refused.returncode == 1  # (as piped: a finding at error level)


def records(stdout: str) -> list[dict[str, object]]:
    return [orjson.loads(line) for line in stdout.splitlines()]


def test_format_json_is_one_object_a_line_for_all_a_turn_says(tmp_path):
    (tmp_path / "README.md").write_text("# a readme\n")
    run = chat(tmp_path, EXAMPLE, "hello\n", "--format", "json", "--permissions", "allow")
    assert run.returncode == 0, run.stderr
    said = records(run.stdout)  # (every line JSON, or this raises)
    kinds = [r["type"] for r in said]
    for kind in ("thought", "plan", "tool_call", "permission", "permission_decision",
                 "tool_call_update", "text"):  # fmt: skip
        assert kind in kinds, kinds
    assert kinds.index("permission") < kinds.index("permission_decision")
    decision = next(r for r in said if r["type"] == "permission_decision")
    assert decision["outcome"] == {"outcome": "selected", "optionId": "allow"}
    assert "".join(str(r["text"]) for r in said if r["type"] == "text").startswith(REPLY)
    start, end, result = said[0], said[-2], said[-1]
    assert start == {
        "type": "start", "session": "sess_0001",
        "agent": {"name": "acp-proxy-example-agent", "version": "0.1.0"}, "protocol": 1,
        "cwd": str(tmp_path), "recording": str(tmp_path / "rec.jsonl"),
    }  # fmt: skip
    assert kinds.count("start") == 1 and kinds.count("result") == 1
    assert end["type"] == "turn_end" and end["stop_reason"] == "end_turn"
    assert isinstance(end["duration_ms"], int)
    assert result["type"] == "result" and result["is_error"] is False
    assert result["subtype"] == "success" and result["exit_status"] == 0
    assert result["result"] == "".join(str(r["text"]) for r in said if r["type"] == "text")
    assert result["stop_reason"] == "end_turn" and result["num_turns"] == 1
    assert result["session"] == "sess_0001" and result["recording"] == start["recording"]
    assert isinstance(result["duration_ms"], int) and result["duration_ms"] > 0
    failing = chat(tmp_path, [*EXAMPLE, "--misbehave"], "hi\n", "--format", "json",
                   "--protocol", "2")  # fmt: skip
    assert failing.returncode == 1
    findings = [r for r in records(failing.stdout) if r["type"] == "finding"]
    assert any(f["level"] == "error" and f["rule"] == "prompt-result-message-id" for f in findings)
    result = records(failing.stdout)[-1]
    assert result["type"] == "result" and result["is_error"] is True
    first = next(f for f in findings if f["level"] == "error")  # (why: the first error)
    assert result["exit_status"] == 1 and result["error"] == f"{first['rule']}: {first['message']}"
    # v2: the usage_update's context and cost
    v2 = chat(tmp_path, EXAMPLE, "hi\n", "--format", "json", "--protocol", "2")
    assert records(v2.stdout)[-1]["cost"] == {"amount": 0.002, "currency": "USD"}
    assert records(v2.stdout)[-1]["context"] == {"used": 2400, "size": 200000}


def test_format_json_says_a_failure_on_stdout_too_start_first_result_last(tmp_path):
    """An agent that never answers, or cannot start: stdout still starts with the start
    object and ends with a result naming the error (before: one finding, the reason on
    stderr only)."""
    hung = chat(tmp_path, [*PROBE_AGENT, "hang-init"], "", "--format", "json", "-p", "hi",
                "--timeout", "1")  # fmt: skip
    assert hung.returncode == 1
    said = records(hung.stdout)
    assert said[0]["type"] == "start" and said[0]["session"] is None
    assert said[-1]["type"] == "result" and said[-1]["is_error"] is True
    assert str(said[-1]["error"]).startswith("no response to initialize within 1s (--timeout)")
    gone = chat(tmp_path, ["no-such-agent-here"], "", "--format", "json", "-p", "hi")
    assert gone.returncode == 2 and "not found" in gone.stderr
    assert [r["type"] for r in records(gone.stdout)] == ["start", "result"]
    assert records(gone.stdout)[-1]["error"] == "agent command not found: no-such-agent-here"


#: A v1 agent that loads session s1, replaying its history, and answers each prompt.
LOADING = [
    sys.executable,
    "-c",
    """
import json, sys
def send(message):
    print(json.dumps({"jsonrpc": "2.0", **message}), flush=True)
def say(kind, text):
    send({"method": "session/update", "params": {"sessionId": "s1", "update": {
        "sessionUpdate": kind, "content": {"type": "text", "text": text}}}})
for line in sys.stdin:
    request = json.loads(line)
    method, ident = request.get("method"), request.get("id")
    if method == "initialize":
        send({"id": ident, "result": {"protocolVersion": 1,
                                      "agentCapabilities": {"loadSession": True}}})
    elif method == "session/load":
        say("user_message_chunk", "old question")
        say("agent_message_chunk", "old answer")
        send({"id": ident, "result": {}})
    elif method == "session/prompt":
        say("agent_message_chunk", "new answer")
        send({"id": ident, "result": {"stopReason": "end_turn"}})
""",
]


def test_piped_a_loaded_sessions_history_is_not_the_answer(tmp_path):
    run = chat(tmp_path, LOADING, "again\n", "--session", "s1")
    assert run.returncode == 0, run.stderr
    assert run.stdout == "new answer\n"
    run = chat(tmp_path, LOADING, "again\n", "--session", "s1", "--format", "json")
    assert run.returncode == 0, run.stderr
    said = [(r["type"], r["text"], r.get("history")) for r in records(run.stdout) if "text" in r]
    assert said == [
        ("user", "old question", True),
        ("text", "old answer", True),
        ("text", "new answer", None),
    ]


def test_piped_the_chats_commands_are_its_own_any_other_slash_word_the_agents(tmp_path):
    run = chat(tmp_path, EXAMPLE, "/mode code\n/frob it\n//new\n/new\n/quit\nnever\n")
    assert run.returncode == 0, run.stderr
    sent = frames(tmp_path / "rec.jsonl")
    assert [f["params"]["modeId"] for f in sent if f.get("method") == "session/set_mode"] == [  # type: ignore[index]
        "code"
    ]
    assert prompts_sent(tmp_path / "rec.jsonl") == ["/frob it", "/new"]
    assert sum(f.get("method") == "session/new" for f in sent) == 2
    wrong = chat(tmp_path, EXAMPLE, "/mode nope\n/mode\n")
    assert wrong.returncode == 1
    assert "no mode 'nope' (the session's: ask, code)" in wrong.stderr
    assert "usage: /mode ID" in wrong.stderr and wrong.stdout == ""


#: ``python -m acp_proxy``, without readline (input() reads the terminal as it is).
NO_READLINE = [
    sys.executable, "-c",
    "import sys; sys.modules['readline'] = None; from acp_proxy.cli import main; main()",
]  # fmt: skip


@pytest.mark.parametrize("proxy", [PROXY, NO_READLINE], ids=["readline", "no-readline"])
def test_on_a_terminal_a_paste_is_one_prompt_and_a_backslash_goes_on(tmp_path, proxy):
    """A terminal marks a paste only when asked (ESC [ ? 2004 h): the chat asks, with
    readline too (CPython turns readline's bracketed paste off), and a two-line paste is
    one prompt (before: one a line, with readline)."""
    record = tmp_path / "rec.jsonl"
    terminal = Terminal([*proxy, "chat", "--record", str(record), "--", *NAMELESS], tmp_path,
                        term="xterm")  # fmt: skip
    terminal.until(b"> ")
    terminal.paste(b"first line\nsecond line")
    terminal.type(b"\r")
    terminal.until(b"> ")
    terminal.type(b"one \\\r")
    terminal.type(b"two\r")
    terminal.until(b"> ")
    terminal.type(b"/quit\r")
    assert terminal.close() == 0
    assert prompts_sent(record) == ["first line\nsecond line", "one \ntwo"]


def test_on_a_terminal_what_a_question_finds_typed_is_kept_for_the_next_prompt(tmp_path):
    """Lines typed or pasted in a turn are never an answer, and never lost: a question
    sets them aside, and the prompt after the turn starts with them (one prompt, sent with
    Enter). Before: dropped, and the recording held the first line of the paste alone."""
    record = tmp_path / "rec.jsonl"
    term = Terminal([*PROXY, "chat", "--record", str(record), "--", *PROBE_AGENT], tmp_path,
                    term="xterm")  # fmt: skip
    term.until(b"> ")
    term.type(b"hi\r")
    term.until(b"y/n? ")
    term.type(b"y\r")
    term.until(b"Hello")
    # in the turn: the next prompt, then a paste of two lines and a line typed, unsent
    term.type(b"again\r")
    term.paste(b"pasted one\npasted two\n")
    term.type(b"typed thr\x7free")
    term.until(b"waits for the next prompt")
    term.until(b"y/n? ")
    term.type(b"n\r")
    term.until(b"ended: ")
    term.until(b"> ")
    term.until(b"typed three")  # the prompt starts with what was set aside
    term.type(b"\r")
    term.until(b"y/n? ")
    term.type(b"y\r")
    term.until(b"ended: ")
    term.until(b"> ")
    term.type(b"/quit\r")
    assert term.close() == 0, plain(term.seen)[-2000:]
    assert prompts_sent(record) == ["hi", "again", "pasted one\npasted two\ntyped three"]


def test_what_was_typed_is_read_as_line_editing_would():
    from acp_proxy.drive.chat.terminal import typed_text as _typed_text

    keys = b"ab\x7fc\x1b[Ddone\rjunk\x15kept\r\x1b[200~p1\np2\x1b[201~caf\xc3\xa9\x1bOA"
    assert _typed_text(keys) == ("acdone\nkept\np1\np2caf\u00e9", False)
    assert _typed_text(b"x\x04") == ("x", True)
    assert _typed_text(b"\x07\x1b\x00tab\there") == ("tab\there", False)


def test_the_chat_is_a_package_no_module_over_1000_lines_no_class_over_600():
    """Issue 55: the chat's ideas (the wire, the session, the terminal, permissions, the
    commands, the script) are modules of their own, none of them a 900-line class."""
    import ast

    import acp_proxy.drive.chat as package

    folder = Path(package.__file__).parent
    modules = sorted(folder.glob("*.py"))
    assert len(modules) >= 6
    for path in modules:
        source = path.read_text()
        assert source.count("\n") <= 1000, path.name
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                assert lines <= 600, f"{path.name}: {node.name} {lines} lines"
    assert {"HELP", "Options", "chat", "json_events"} <= set(dir(package))


def test_prompt_with_stdin_left_open_says_it_waits_for_its_end(tmp_path):
    """`chat -p TEXT` from a job whose stdin is a pipe nobody closes: the wait is said on
    stderr (codex exec hangs silently there), and what comes before the end is sent."""
    command = [*PROXY, "chat", "--no-record", "-p", "review", "--", *EXAMPLE]
    with subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        env=clean_env(), cwd=tmp_path,
    ) as proc:  # fmt: skip
        assert proc.stdin is not None and proc.stderr is not None
        said = b""
        end = time.monotonic() + 30
        while b"reading stdin to its end" not in said and time.monotonic() < end:
            if select.select([proc.stderr], [], [], 0.2)[0]:
                said += os.read(proc.stderr.fileno(), 4096)
        assert b"acp-proxy chat: reading stdin to its end (what goes with --prompt; " in said
        proc.stdin.write(b"late context\n")
        proc.stdin.close()
        assert proc.stdout is not None
        out = proc.stdout.read()
        status = proc.wait(60)
    assert status == 0 and out.decode().startswith(REPLY)


def test_on_a_terminal_a_paste_at_a_question_is_no_answer_and_is_kept(tmp_path):
    """Lines pasted while a permission question waits answer nothing, and are not lost:
    the question is asked again, and the next prompt starts with them."""
    record = tmp_path / "rec.jsonl"
    term = Terminal([*PROXY, "chat", "--record", str(record), "--", *PROBE_AGENT], tmp_path,
                    term="xterm")  # fmt: skip
    term.until(b"> ")
    term.type(b"hi\r")
    term.until(b"y/n? ")
    term.paste(b"a pasted line\nand another")
    term.type(b"\r")
    term.until(b"kept for the next prompt")
    term.until(b"y/n? ")
    term.type(b"y\r")
    term.until(b"ended: ")
    term.until(b"> ")
    term.until(b"and another")
    term.type(b"\r")
    term.until(b"y/n? ")
    term.type(b"y\r")
    term.until(b"ended: ")
    term.until(b"> ")
    term.type(b"/quit\r")
    assert term.close() == 0, plain(term.seen)[-2000:]
    assert prompts_sent(record) == ["hi", "a pasted line\nand another"]


#: An addon of the user's (run --addon's): its hooks' counts, printed at the end.
COUNTING_ADDON = """
import acp_proxy


class Counts(acp_proxy.Addon):
    frames = 0

    def frame(self, seen):
        self.frames += 1

    def done(self, exit_status, reason):
        print("addon saw", self.frames, "frames")


addons = [Counts()]
"""
SECRET = "sk-ant-api03-" + "Q" * 40


def test_chat_takes_redact_and_addon_as_run_does(tmp_path):
    """chat --redact records the prompt's key as a tag (the agent still gets it: the wire is
    untouched), and --addon hands the session to the user's addon, whose print goes to
    stderr, with as many frames as the recording holds."""
    addon = tmp_path / "counts.py"
    addon.write_text(COUNTING_ADDON)
    run = chat(tmp_path, EXAMPLE, "", "-p", f"use {SECRET}", "--redact", "--addon", str(addon))
    assert run.returncode == 0, run.stderr
    recorded = (tmp_path / "rec.jsonl").read_text()
    assert SECRET not in recorded and "[redacted:" in recorded
    said = [line for line in run.stderr.splitlines() if line.startswith("addon saw")]
    assert said == [f"addon saw {len(frames(tmp_path / 'rec.jsonl'))} frames"], run.stderr
    assert "addon saw" not in run.stdout
    refused = subprocess.run(
        [*PROXY, "chat", "--no-record", "--redact", "-p", "hi", "--", *EXAMPLE],
        capture_output=True, text=True, timeout=60, env=clean_env(), cwd=tmp_path,
    )  # fmt: skip
    assert refused.returncode == 2 and "--redact has no effect with --no-record" in refused.stderr
