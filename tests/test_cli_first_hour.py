"""The first hour of a demanding newcomer (walkthrough 5's rough edges): what they type as
they would for git, rg, jq or ``claude -p`` works as they expect."""

from __future__ import annotations

import contextlib

from tests.conftest import acp, invoke


def test_dash_capital_v_is_the_version_as_for_most_tools():
    """``-V`` as acpx, codex and many others take it: ``--version``'s two lines."""
    short, long = invoke("-V"), invoke("--version")
    assert short.returncode == 0 and short.stdout == long.stdout
    assert short.stdout.startswith(b"acp-proxy, version ")


def test_an_agent_not_on_path_says_where_it_was_looked_for():
    """A bare name not found on PATH: the line says so, and ``run`` (an editor's command)
    that an editor's PATH is its own; a path that does not exist needs no hint."""
    run = invoke("run", "--no-record", "--", "no-such-agent-here")
    assert run.returncode == 127
    assert run.stderr.decode().strip() == (
        "acp-proxy run: agent command not found: no-such-agent-here"
        " (not on PATH; an editor has its own PATH: give the absolute path)"
    )
    probe = invoke("probe", "--no-record", "--", "no-such-agent-here")
    assert probe.returncode == 2
    assert "agent command not found: no-such-agent-here (not on PATH)" in probe.stderr.decode()
    absolute = invoke("probe", "--no-record", "--", "/nonexistent/agent")
    assert absolute.stderr.decode().strip().endswith("agent command not found: /nonexistent/agent")


def test_every_command_s_help_gives_its_exit_statuses():
    """As git's manual pages and grep's do: every command's --help says its exit statuses
    (the words may wrap); run's usage names the agent as probe and chat do."""
    import re

    from acp_proxy.cli import cli

    for name in cli.commands:
        text = " ".join(invoke(name, "--help").stdout.decode().split())
        assert re.search(r"Exit status(es)?[:,] ", text), name
    usage = invoke("run", "--help").stdout.decode().splitlines()[0]
    assert usage.endswith(" run [OPTIONS] -- AGENT [ARGS]..."), usage
    assert "missing argument '-- AGENT [ARGS]...'" in invoke("run").stderr.decode()


def test_every_command_s_help_names_its_environment_variables():
    """Not only run's: each command's --help says its options are read from
    ACP_PROXY_<COMMAND>_<OPTION> too, with one of its own as the example; help text that
    wraps still reads as one paragraph (no indentation left from the docstring)."""
    from acp_proxy.cli import cli

    for name in cli.commands:
        command = cli.commands[name]
        own = name.upper().replace("-", "_")
        if not [p for p in command.params if p.name != "help" and p.envvar]:
            continue
        text = " ".join(invoke(name, "--help").stdout.decode().split())
        assert f"ACP_PROXY_{own}_" in text, name
        assert "ACP_PROXY_<OPTION>" in text or name == "run", name
    stats = invoke("stats", "--help").stdout.decode()
    assert "(this command's, as ACP_PROXY_STATS_FORMAT)" in " ".join(stats.split()), stats
    assert "\n      " not in stats.split("Options:")[0], stats


def test_run_ends_with_a_line_of_what_was_recorded_and_how_to_see_it(tmp_path):
    """As the demo ends: the frames and findings of the session and the command that shows
    it (the recording's path, quoted for a shell), last in the log; none without a
    recording."""
    import sys

    import orjson

    initialize = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                  "params": {"protocolVersion": 1, "clientCapabilities": {}}}  # fmt: skip
    agent = [sys.executable, "-m", "acp_proxy.devtools.example_agent"]
    where = tmp_path / "my sessions" / "one.jsonl"
    where.parent.mkdir()
    env = {"NO_COLOR": "1"}
    line = orjson.dumps(initialize) + b"\n"
    # (a process: run relays its descriptors 0 and 1 themselves)
    run = acp("run", "--record", str(where), "--", *agent, input=line, env=env)
    assert run.returncode == 0, run.stderr
    last = run.stderr.decode().strip().splitlines()[-1]
    assert "recorded" in last and "frames=2" in last and "errors=0" in last, last
    assert f"see=\"acp-proxy show '{where}'\"" in last, last
    quiet = acp("run", "--no-record", "--", *agent, input=line, env=env)
    assert "recorded" not in quiet.stderr.decode()


def test_test_agent_on_a_terminal_says_what_it_is_for(tmp_path):
    """Typed at a terminal, test-agent says that it speaks ACP for a client and how to name
    it (not silence while typed lines go nowhere); from a pipe (a client) it says nothing
    of the sort. Its --help says how to have fs-read checked."""
    import os
    import pty
    import select
    import subprocess

    from tests.conftest import PROXY, clean_env

    main, secondary = pty.openpty()
    proc = subprocess.Popen([*PROXY, "test-agent", "--no-record"], stdin=secondary,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env())  # fmt: skip
    os.close(secondary)
    try:
        assert proc.stderr is not None
        ready, _, _ = select.select([proc.stderr], [], [], 30)
        line = proc.stderr.readline().decode() if ready else ""
    finally:
        proc.kill()
        proc.wait(10)
        os.close(main)
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
    assert line.startswith("acp-proxy test-agent: speaks ACP on stdin and stdout, for a client")
    assert "`acp-proxy test-agent` as the agent command" in line, line
    piped = acp("test-agent", "--no-record", input=b"")
    assert b"speaks ACP" not in piped.stderr, piped.stderr
    helped = " ".join(invoke("test-agent", "--help").stdout.decode().split())
    assert "fs-read reads the file a prompt names" in helped


def test_probe_list_fits_the_terminal_and_stays_a_line_a_check_in_a_pipe():
    """On a terminal 80 columns wide, each check's description wraps under its own column
    (not the terminal's mid-word cut); into a pipe, a check a line, as grep wants."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import termios

    from tests.conftest import PROXY, clean_env

    piped = invoke("probe", "--list").stdout.decode().splitlines()
    assert max(len(line) for line in piped) > 200
    main, secondary = pty.openpty()
    fcntl.ioctl(secondary, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 80, 0, 0))
    env = clean_env(PAGER="cat", COLUMNS="80", NO_COLOR="1")
    proc = subprocess.Popen([*PROXY, "probe", "--list"], stdout=secondary, stderr=secondary,
                            stdin=subprocess.DEVNULL, env=env)  # fmt: skip
    os.close(secondary)
    out = b""
    with contextlib.suppress(OSError):  # (EIO once the process is gone)
        while chunk := os.read(main, 65536):
            out += chunk
    proc.wait(30)
    os.close(main)
    lines = out.decode().replace("\r\n", "\n").splitlines()
    assert lines and max(len(line) for line in lines) <= 80, max(lines, key=len)
    names = [line.split()[0] for line in piped]
    starts = [line for line in lines if line and not line.startswith(" ")]
    assert [line.split()[0] for line in starts] == names
    column = len(piped[0]) - len(piped[0].split(None, 2)[2])
    follow = [line for line in lines if line.startswith(" ")]
    assert follow and all(line.startswith(" " * column) for line in follow), follow[:3]


def test_run_inspect_s_help_points_to_one_url_for_every_session():
    """A URL a session, in the editor's log, is hard to find again: the help says that
    ``acp-proxy inspect`` left open serves every session of the directory at one URL."""
    helped = " ".join(invoke("run", "--help").stdout.decode().split())
    assert "a new one each session. One URL for every session: keep `acp-proxy inspect` open" in (
        helped
    )
