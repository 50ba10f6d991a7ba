"""The tests run what a command prints in-process (``conftest.invoke``): it must say what the
process says, byte for byte, exit status, stdout and stderr, or those tests prove nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import RECORDINGS, acp, invoke

MISBEHAVING = str(RECORDINGS / "misbehaving.jsonl")


@pytest.mark.parametrize(
    "args",
    [
        ["show", "--color", "always", MISBEHAVING],  # (colour asked for: kept, as in a pipe)
        ["show", MISBEHAVING],  # (not asked for, in a pipe: none)
        ["validate", "--by-rule", MISBEHAVING],  # exit 1, the summary on stderr
        ["replay", "--speed", "0", "--no-record", MISBEHAVING],  # its log on the descriptor 2
        ["show", "--bogus"],  # a usage error: exit 2, one line
        ["show", "{tmp}/missing.jsonl"],  # an unreadable recording
        ["--help"],
    ],
    ids=" ".join,
)
def test_in_process_says_what_the_process_says(args: list[str], tmp_path: Path) -> None:
    args = [arg.format(tmp=tmp_path) for arg in args]
    process, here = acp(*args), invoke(*args)
    assert here.returncode == process.returncode
    assert here.stdout == process.stdout
    if args[0] == "replay":  # (the log's lines carry the time: the same lines, by event)
        assert [line.split(b"]", 1)[1] for line in here.stderr.splitlines()] == [
            line.split(b"]", 1)[1] for line in process.stderr.splitlines()
        ]
        assert here.stderr.count(b"\n") == process.stderr.count(b"\n") > 0
    else:
        assert here.stderr == process.stderr


def test_standard_input_and_the_environment_are_the_processes() -> None:
    """``-`` reads what is fed as from a pipe; nothing fed is /dev/null (a character device,
    refused); ACP_PROXY_* of the tests' own environment is left out, as :func:`acp` does."""
    data = (RECORDINGS / "clean.jsonl").read_bytes()
    for args, given in ((["validate", "-"], data), (["show", "-"], None)):
        process, here = acp(*args, input=given), invoke(*args, input=given)
        assert (here.returncode, here.stdout, here.stderr) == (
            process.returncode,
            process.stdout,
            process.stderr,
        ), args
    limit = {"ACP_PROXY_MAX_RECORD": "100"}
    bounded = invoke("validate", MISBEHAVING, env=limit)
    assert bounded.returncode == 2 and b"ACP_PROXY_MAX_RECORD" in bounded.stderr


def test_what_a_process_says_once_is_said_again_in_the_next_run(tmp_path: Path) -> None:
    """A note a process gives once (a deprecated spelling) is given by each run, as each
    process gives it."""
    for _ in range(2):
        said = invoke("ls", "--json", str(tmp_path)).stderr
        assert b"--json is deprecated" in said
