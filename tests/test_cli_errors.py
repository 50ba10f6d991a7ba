"""Every CLI error path gives one clear line and a documented exit status, never a
traceback: an unknown option, a missing, unreadable, non-transcript or empty recording, a
directory where a file is expected."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from tests.conftest import PROXY, RECORDINGS, acp, clean_env, invoke

READERS = {
    "validate": [],
    "show": [],
    "stats": [],
    "report": ["-o", "{tmp}/out.html"],
    "replay": [],
    "redact": ["-o", "{tmp}/out.jsonl"],
}


def bad_inputs(tmp: Path) -> dict[str, tuple[Path, bytes]]:
    empty, notes, directory = tmp / "empty.jsonl", tmp / "notes.txt", tmp / "dir"
    empty.write_bytes(b"")
    notes.write_text("hello\n")
    directory.mkdir()
    return {
        "missing": (tmp / "missing.jsonl", b"No such file or directory"),
        "empty": (empty, b"is empty: not an acp-proxy transcript"),
        "not a transcript": (notes, b"is not an acp-proxy transcript"),
        "a directory": (directory, b"Is a directory"),
    }


@pytest.mark.parametrize("command", sorted(READERS))
def test_bad_recordings_are_exit_2_with_one_line(command, tmp_path):
    """Exit 2 and one line naming the file and what is wrong with it."""
    options = [o.format(tmp=tmp_path) for o in READERS[command]]
    for what, (path, said) in bad_inputs(tmp_path).items():
        proc = invoke(command, *options, str(path))
        assert proc.returncode == 2, (command, what, proc.stderr)
        lines = proc.stderr.decode().strip().splitlines()
        assert len(lines) == 1 and said.decode() in lines[0], (command, what, lines)
        assert str(path) in lines[0] and b"Traceback" not in proc.stderr
        assert proc.stdout == b""


#: Every command of the group.
COMMANDS = sorted(
    [
        "validate",
        "show",
        "stats",
        "report",
        "replay",
        "redact",
        "run",
        "follow",
        "rules",
        "demo",
        "ls",
        "inspect",
        "search",
        "diff",
        "probe",
        "chat",
    ]
)


@pytest.mark.parametrize("command", COMMANDS)
def test_an_unknown_option_is_exit_2_and_says_which(command):
    """A usage error: exit 2, the option named, no traceback."""
    proc = invoke(command, "--no-such-option")
    assert proc.returncode == 2
    assert b"no such option '--no-such-option'" in proc.stderr
    assert b"Traceback" not in proc.stderr and proc.stdout == b""


@pytest.mark.parametrize(
    "args",
    [
        ["--bogus"],
        ["bogus"],
        *([command, "--bogus"] for command in COMMANDS),
        ["show"],
        ["show", "--color", "x", "r.jsonl"],
        ["diff", "a.jsonl"],
        ["run", "--grace", "soon", "--", "true"],
        ["replay", "--as", "agent", "r.jsonl", "--", "agent"],
    ],
    ids=" ".join,
)
def test_a_usage_error_is_one_line_naming_the_command_and_its_help(args):
    """As every other error of acp-proxy: one line on stderr, exit 2, the command it is
    about first and where its help is (click's own four lines are not kept)."""
    proc = invoke(*args)
    command = (
        "acp-proxy" if args[0].startswith("-") or args[0] == "bogus" else f"acp-proxy {args[0]}"
    )
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 2 and proc.stdout == b"", proc.stderr
    assert len(lines) == 1, lines
    assert lines[0].startswith(f"{command}: ") and lines[0].endswith(f"({command} --help)"), lines


def test_usage_keeps_help_version_and_the_bare_group_help():
    """What is no usage error stays as it was: --help, --version, and `acp-proxy` alone
    (its help, exit 2)."""
    assert invoke("show", "--help").stdout.startswith(b"Usage: ")
    assert invoke("--version").stdout.startswith(b"acp-proxy, version ")
    bare = invoke()
    assert bare.returncode == 2 and b"Commands:" in bare.stdout + bare.stderr


def test_an_output_that_cannot_be_written_is_a_clear_error(tmp_path):
    """report and redact say which output they cannot write (exit 1)."""
    recording = RECORDINGS / "clean.jsonl"
    for command in ("report", "redact"):
        proc = invoke(command, str(recording), "-o", str(tmp_path))
        assert proc.returncode == 1, proc.stderr
        said = proc.stderr.decode().splitlines()
        assert said[0].startswith(f"acp-proxy {command}: cannot write {tmp_path}: "), said
        assert len(said) == 1  # (never click's "Error:", nor a traceback)


def test_a_search_rule_glob_that_matches_no_rule_is_a_usage_error_naming_close_ones():
    """`search --rule` takes globs of the catalog's rules; one that matches none could only
    ever find nothing: exit 2, the close rules named (as `rules RULE`)."""
    proc = invoke("search", "--rule", "message-id-missng", "x", str(RECORDINGS))
    assert proc.returncode == 2 and proc.stdout == b"", proc.stderr
    assert b"matches no rule" in proc.stderr and b"message-id-missing" in proc.stderr
    assert invoke("search", "--rule", "bogus-rule", "x", str(RECORDINGS)).returncode == 2
    found = invoke("search", "--rule", "message-id-*", ".", str(RECORDINGS))
    assert found.returncode == 0 and b"[message-id-missing]" in found.stdout, found.stderr


def test_a_usage_line_keeps_an_ellipsis_and_drops_only_a_sentences_stop():
    """The one-line form drops the stop that ends click's sentence, not the last dot of
    ``[ARGS]...`` (it said ``[ARGS]..``)."""
    missing = invoke("replay", "--as", "client", str(RECORDINGS / "clean.jsonl")).stderr.decode()
    assert "-- AGENT [ARGS]... (acp-proxy replay --help)" in missing, missing
    unknown = invoke("show", "--bogus").stderr.decode()
    assert "no such option '--bogus' (" in unknown, unknown


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["run", "--record", "-", "--", "true"], "'-' would be standard output"),
        (["run", "--log-file", "-", "--", "true"], "logs never go to"),
        (["probe", "--record", "-", "--", "true"], "'-' would be standard output"),
        (["chat", "--record", "-", "--", "true"], "'-' would be standard output"),
        (["demo", "--record", "-"], "'-' would be standard output"),
        (["replay", "--as", "client", "--record", "-", "r.jsonl", "--", "a"], "standard output"),
        (["replay", "--speed", "0", "-"], "RECORDING - would be standard input"),
        (["run", "--no-record", "--record", "x.jsonl", "--", "true"], "--record has no effect"),
        (["run", "--no-record", "--redact", "--", "true"], "--redact has no effect"),
        (["run", "--no-record", "--no-stderr", "--", "true"], "--no-stderr has no effect"),
        (["run", "--inspect", "--no-record", "--", "sleep", "2"], "--inspect has no effect"),
        (["run", "--keep-days", "3", "--no-record", "--", "true"], "--keep-days has no effect"),
        (["run", "--keep-size", "1G", "--no-record", "--", "true"], "--keep-size has no effect"),
        (["probe", "--format", "json", "--color", "always", "--", "true"], "--color has no"),
        (["probe", "--format", "junit", "--color", "never", "--", "true"], "--color has no"),
        (["probe", "--only", "handshake", "--prompt", "hello", "--", "true"], "--prompt has no"),
        (["probe", "--only", "handshake,cancel", "--prompt", "hi", "--", "true"], "--prompt has"),
        (
            [
                "probe",
                "--skip",
                "prompt,lifecycle,permission,session-load",
                "--prompt",
                "hi",
                "--",
                "true",
            ],
            "--prompt has no effect",
        ),
        (["probe", "--only", "handshake,bogus", "--", "true"], 'no check "bogus"'),
        (["run", "--record", "out/", "--keep-days", "3", "--", "true"], "--keep-days has no"),
        (["run", "--record", "out/", "--keep-size", "1G", "--", "true"], "--keep-size has no"),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_stdout_is_never_a_file_and_options_that_would_do_nothing_are_refused(args, said, tmp_path):
    """``-`` is standard output, which carries the protocol (run, replay) or the command's
    own output: never where a recording or the log goes, as a file named ``-`` or on it.
    An option the others make do nothing is a usage error; nothing is started."""
    proc = invoke(*args, cwd=tmp_path)
    lines = proc.stderr.decode().splitlines()
    if args[:2] == ["probe", "--format"]:  # a document that says why (CI reads it), no output
        assert proc.returncode == 2 and said in proc.stdout.decode(), proc.stdout
    else:
        assert proc.returncode == 2 and proc.stdout == b"", proc.stderr
    assert len(lines) == 1 and said in lines[0], lines
    assert list(tmp_path.iterdir()) == []  # no file named '-', no recording


def test_options_set_in_the_environment_are_for_the_commands_they_fit(tmp_path):
    """What the environment sets is not a usage error where it does nothing: an editor
    config's ACP_PROXY_REDACT stays harmless beside a command line's --no-record."""
    env = {"ACP_PROXY_REDACT": "1", "ACP_PROXY_KEEP_DAYS": "3"}
    proc = acp("run", "--no-record", "--", "true", env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    recorded = {"ACP_PROXY_RECORD": str(tmp_path / "r.jsonl")}  # (set for run, in a config)
    for command in ("probe", "chat"):
        proc = acp(command, "--no-record", "--", "/nonexistent/agent", env=recorded, cwd=tmp_path)
        assert b"contradict" not in proc.stderr and b"not found" in proc.stderr, proc.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_a_bad_value_from_the_environment_names_the_variable(tmp_path):
    """A malformed value set in the environment (an editor's config) says where it is set."""
    proc = acp("run", "--", "true", env={"ACP_PROXY_GRACE": "soon"}, cwd=tmp_path)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, lines
    assert "invalid value for '--grace'" in lines[0] and "(set by $ACP_PROXY_GRACE)" in lines[0]
    given = acp("run", "--grace", "soon", "--", "true", cwd=tmp_path)
    assert b"set by" not in given.stderr


@pytest.mark.parametrize("variable", ["ACP_PROXY_MAX_FRAME", "ACP_PROXY_MAX_RECORD"])
@pytest.mark.parametrize("value", ["lots", "0", "-5", "1.5", "²"])
def test_a_variable_that_is_no_option_s_is_checked_too(tmp_path, variable, value):
    """The byte bounds (no option's variables): a value that is no number of bytes is one line,
    exit 2, the variable named (before: a default taken in silence, or a traceback for ²)."""
    proc = invoke("validate", str(RECORDINGS / "clean.jsonl"), env={variable: value}, cwd=tmp_path)
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, lines
    assert lines[0].startswith(f"acp-proxy validate: ${variable}={value!r} is not a number")


def test_a_character_device_is_named_for_what_it_is():
    """/dev/zero as a recording, named or on standard input: a character device (a terminal
    on stdin is said as a terminal), one line, exit 2."""
    for args, stdin, said in (
        (["show", "/dev/zero"], None, b"/dev/zero is a character device, not a recording"),
        (["show", "-"], "/dev/zero", b"standard input is a character device, not a recording"),
    ):
        with open(stdin or os.devnull, "rb") as source:
            proc = subprocess.run([*PROXY, *args], stdin=source, capture_output=True, timeout=60)
        assert proc.returncode == 2 and proc.stderr.strip().endswith(said), proc.stderr


def test_a_terminal_on_standard_input_is_said_as_one():
    """``show -`` typed at a prompt, nothing piped: it says so at once, never waits."""
    import pty

    parent, child = pty.openpty()
    try:
        proc = subprocess.run([*PROXY, "show", "-"], stdin=child, capture_output=True, timeout=60)
    finally:
        os.close(parent)
        os.close(child)
    said = b"standard input is a terminal, not a recording"
    assert proc.returncode == 2 and proc.stderr.strip().endswith(said), proc.stderr


def test_a_missing_connection_is_said_in_words_without_a_raw_plural() -> None:
    """``--connection 5`` of a file with one: "connection" as the option says it, no "(s)"."""
    proc = invoke("replay", "--connection", "5", str(RECORDINGS / "clean.jsonl"))
    lines = proc.stderr.decode().splitlines()
    assert proc.returncode == 2 and len(lines) == 1, lines
    assert lines[0].endswith("clean.jsonl has 1 connection; there is no connection 5")


#: The commands whose ``--help`` examples read recordings (the others start an agent, or
#: serve, or follow for ever).
EXAMPLED = ("report", "redact", "validate", "ls", "search", "show", "diff", "stats", "rules")


@pytest.mark.parametrize("name", EXAMPLED)
def test_each_commands_help_examples_run_as_printed_on_the_shipped_recordings(tmp_path, name):
    """The examples ``--help`` ends with, copied as they are into a shell whose files are
    the shipped recordings (session.jsonl, out/*.jsonl, a.jsonl, ...): none is a usage
    error, none fails."""
    import shutil

    from acp_proxy.cli import cli
    from acp_proxy.clihelp import Command

    out = tmp_path / "out"
    out.mkdir()
    for recording in RECORDINGS.glob("*.jsonl"):
        shutil.copy(recording, out / recording.name)
    for copy in ("session", "before", "after", "a", "b"):
        shutil.copy(RECORDINGS / "v1-tour.jsonl", tmp_path / f"{copy}.jsonl")
    shown = invoke(name, "--help").stdout.decode()
    defined = cli.commands[name]  # (its examples given where it is defined)
    assert isinstance(defined, Command) and defined.examples
    for example in defined.examples:
        assert f"  {example}\n" in shown + "\n"
        python = " ".join(shlex.quote(part) for part in PROXY)
        command = example.replace("acp-proxy", python, 1)
        proc = subprocess.run(
            ["sh", "-c", command], cwd=tmp_path, capture_output=True, timeout=120,
            env=clean_env(ACP_PROXY_RECORD_DIR=str(out)),
        )  # fmt: skip
        # (validate's exit 1: the shipped misbehaving recording's errors, as it says)
        failing = example.startswith("acp-proxy validate") and "out/*" in example
        assert proc.returncode == (1 if failing else 0), (example, proc.stderr)
        assert b"--help)" not in proc.stderr, example  # (no usage error)


def test_the_shipped_recordings_hold_no_machines_paths():
    """Every absolute path in the shipped recordings is the placeholder /home/me/project."""
    for recording in RECORDINGS.glob("*.jsonl"):
        paths = set(re.findall(rb'"(/[^"]*)"', recording.read_bytes()))
        assert paths, recording
        strays = {p for p in paths if not p.startswith(b"/home/me/project")}
        assert not strays, (recording.name, strays)


def test_one_is_said_in_the_singular(tmp_path):
    """A recording of one frame with one error: "1 frame", "1 error", never "1 frames"."""
    lines = (RECORDINGS / "misbehaving.jsonl").read_bytes().splitlines(keepends=True)
    one = tmp_path / "one.jsonl"
    one.write_bytes(lines[0] + next(line for line in lines if b'"seq":2,' in line))
    said = b"".join(
        invoke(*command, str(one)).stdout + invoke(*command, str(one)).stderr
        for command in (["stats"], ["validate"], ["validate", "--by-rule"], ["ls"])
    ).decode()
    assert "1 frame " in said and "1 error," in said and "not-json: 1 error" in said, said
    assert not re.search(r"\b1 [a-z]+s\b", said), said
