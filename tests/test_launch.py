"""The agent started in a blink (``acp_proxy.__main__``): ``run``, ``probe`` and ``chat``
start it before click is loaded, the command takes it over; a command line that is wrong
after all stops it; and the commands that start no agent load only what they use."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import click
import pytest

from acp_proxy.__main__ import OPTIONS, agent_argv
from acp_proxy.cli import cli
from acp_proxy.live.spawn import Early, take_agent


def test_the_table_of_options_is_the_commands_own() -> None:
    """A new option of run, probe or chat must be in the table (else its command lines
    start the agent late: still right, only slower), and each is a flag or takes a value
    as click has it."""
    for name, (valued, flags) in OPTIONS.items():
        command = cli.commands[name]
        has = {
            opt: isinstance(param, click.Option) and param.is_flag
            for param in command.params
            if isinstance(param, click.Option)
            for opt in param.opts + param.secondary_opts
        }
        if name == "probe":  # (left out on purpose: probe --list starts no agent)
            assert has.pop("--list") is True
        assert has == {**dict.fromkeys(valued, False), **dict.fromkeys(flags, True)}, name


@pytest.mark.parametrize(
    ("args", "agent"),
    [
        (["run", "--", "my-agent", "--acp"], ["my-agent", "--acp"]),
        (["run", "my-agent", "--acp"], ["my-agent", "--acp"]),
        (["run", "--record", "out/", "--redact", "--", "a"], ["a"]),
        (["run", "--record=out/", "--no-record", "a", "--", "b"], ["a", "--", "b"]),
        (["run", "--log-file", "--", "--", "a"], ["a"]),  # (--log-file's value is "--")
        (["probe", "--only", "prompt", "--format", "json", "--", "a"], ["a"]),
        (["chat", "--cwd", "/tmp", "--no-color", "--", "a", "-v"], ["a", "-v"]),
        (["run", "--help", "--", "a"], None),
        (["run", "-h", "a"], None),
        (["probe", "--list", "--", "a"], None),
        (["run", "--bogus", "--", "a"], None),
        (["run", "--no-record=1", "--", "a"], None),
        (["run", "--record"], None),
        (["run", "--no-record", "--"], None),
        (["run"], None),
        (["validate", "a.jsonl"], None),
        (["--version"], None),
        ([], None),
    ],
)
def test_the_agent_is_found_as_click_will_find_it(args: list[str], agent: list[str] | None) -> None:
    assert agent_argv(args) == agent


def test_a_command_takes_the_early_agent_and_another_is_stopped() -> None:
    early = Early.start(["cat"])
    agent = early.agent
    assert agent is not None and agent.process.poll() is None
    assert take_agent(early, ["cat"]) is agent  # the same process, not a second
    agent.kill()

    early = Early.start(["cat"])
    first = early.agent
    assert first is not None
    other = take_agent(early, ["cat", "-u"])
    assert other is not first and other.argv == ["cat", "-u"]
    assert first.process.poll() is not None  # stopped: it was not what the command runs
    other.kill()

    early = Early.start(["no-such-agent-anywhere"])
    assert early.agent is None  # the command tries again, and says why
    early.discard()


def test_an_agent_started_early_is_stopped_by_a_usage_error(tmp_path: Path) -> None:
    """``run --grace x -- AGENT``: the agent is started before click reads --grace; the
    error stops it (it was sent nothing) and is said in one line, exit 2."""
    pid_file = tmp_path / "pid"
    agent = ["sh", "-c", f"echo $$ > {pid_file}; exec sleep 30"]
    proc = subprocess.run(
        [sys.executable, "-m", "acp_proxy", "run", "--grace", "x", "--", *agent],
        capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.returncode == 2
    assert proc.stderr.strip() == (
        "acp-proxy run: invalid value for '--grace': 'x' is not a number (acp-proxy run --help)"
    )
    pid = int(pid_file.read_text())  # it was started early...
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not _alive(pid)  # ...and stopped


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # (a zombie is gone)


#: What only checking ACP traffic needs, or relaying it.
HEAVY = ("acp_proxy.core.validator", "asyncio", "acp_proxy.live.relay", "acp_proxy.live.observer")
#: The modules where the rules live, each beside its check (one home per rule): ``rules``
#: reads the catalog there, and loads them, but no event loop, relay or observer (its CPU
#: was the same before the rules moved there: the schemas it shows dominate).
RULE_HOMES = [
    "acp_proxy.core.validator_base",
    "acp_proxy.core.validator_schema",
    "acp_proxy.core.validator_v1",
    "acp_proxy.core.validator_v1_agent",
    "acp_proxy.core.validator_v2",
    "acp_proxy.core.validator_v2_updates",
]


@pytest.mark.parametrize(
    ("args", "loaded"),
    [
        (["--help"], []),
        (["--version"], []),
        (["rules"], RULE_HOMES),
        (["rules", "message-id-missing"], RULE_HOMES),
        (["ls", "{dir}"], []),
    ],
)
def test_commands_that_start_no_agent_load_only_what_they_use(
    args: list[str], loaded: list[str], tmp_path: Path
) -> None:
    """``--help``, ``--version``, ``ls`` load no validator, no event loop and none of the
    relay (in a fresh interpreter, through the entry point); ``rules`` only the modules the
    rules are defined in."""
    args = [arg.format(dir=tmp_path) for arg in args]
    code = (
        "import sys\n"
        f"sys.argv = ['acp-proxy', *{args!r}]\n"
        "from acp_proxy.__main__ import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
        f"print(sorted(m for m in sys.modules if m.startswith({HEAVY!r})), file=sys.stderr)\n"
    )
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout or args[0] == "ls"  # (it did what it is for; ls: nothing to list)
    assert proc.stderr.strip().splitlines()[-1] == repr(loaded)


def test_a_command_loads_no_other_commands_module() -> None:
    """The group imports a command's module when the command is asked for (``cli.COMMANDS``):
    ``acp-proxy rules`` loads ``rules.py`` alone, none of the other sixteen (``--help``, which
    lists each one's few words, loads them all)."""
    code = (
        "import sys\n"
        "sys.argv = ['acp-proxy', 'rules']\n"
        "from acp_proxy.__main__ import main\n"
        "try:\n    main()\nexcept SystemExit as exc:\n    assert exc.code in (0, None), exc.code\n"
        "print(sorted(m for m in sys.modules if '.commands.' in m), file=sys.stderr)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "['acp_proxy.readers.commands.rules']"
