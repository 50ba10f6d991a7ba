"""The edges of ``ls``, ``search``, ``inspect``, ``show`` and ``diff`` as git, grep and ripgrep
have them: a file named that cannot be read or is no recording is one line and exit 2 (the
others still done); ``-`` is standard input; the default recordings directory not made yet is
no recordings, not an error; an option that has no effect is a usage error naming it as typed;
colour only on a terminal that can show it."""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from pathlib import Path

import orjson
import pytest

from tests.conftest import PROXY, RECORDINGS, clean_env, invoke
from tests.test_cli_conventions import on_a_terminal

CLEAN = RECORDINGS / "clean.jsonl"
MISBEHAVING = RECORDINGS / "misbehaving.jsonl"
SGR = b"\x1b["


@pytest.fixture
def strays(tmp_path: Path) -> dict[str, Path]:
    """Files that are no recording: an application's JSON log, a raw JSON-RPC capture, an
    empty file, a binary one."""
    files = {
        "log": b'{"level":"info","msg":"hello","time":"2026-12-01T10:00:00Z"}\n',
        "raw": b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}\n',
        "empty": b"",
        "binary": bytes(range(256)) * 2,
    }
    made = {}
    for name, data in files.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(data)
        made[name] = path
    return made


def unreadable(tmp_path: Path) -> tuple[Path, list[str]]:
    """A copy of a recording the command cannot read, and the prefix that runs the command
    without root's right to read anything (setpriv); skipped where that cannot be had."""
    path = tmp_path / "noperm.jsonl"
    shutil.copy(CLEAN, path)
    path.chmod(0)
    if os.geteuid() != 0:
        return path, []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("root without setpriv: every file is readable")
    return path, [setpriv, "--bounding-set", "-dac_override,-dac_read_search"]


def run(prefix: list[str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*prefix, *PROXY, *args], capture_output=True, stdin=subprocess.DEVNULL,
        env=clean_env(), timeout=120,
    )  # fmt: skip


def one_line(proc: subprocess.CompletedProcess[bytes]) -> str:
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1, lines
    return lines[0]


# --- ls ----------------------------------------------------------------------------------------


def test_ls_of_a_file_that_is_no_recording_is_exit_2(strays: dict[str, Path]) -> None:
    for path in strays.values():
        proc = invoke("ls", str(path))
        assert proc.returncode == 2, (path, proc.stderr)
        assert str(path) in one_line(proc)


def test_ls_of_an_unreadable_file_is_exit_2(tmp_path: Path) -> None:
    path, prefix = unreadable(tmp_path)
    proc = run(prefix, "ls", str(path))
    assert proc.returncode == 2, proc.stderr
    assert "Permission denied" in one_line(proc)


def test_ls_lists_the_others_and_still_exits_2(strays: dict[str, Path]) -> None:
    proc = invoke("ls", "--format", "json", str(CLEAN), str(strays["raw"]))
    assert proc.returncode == 2, proc.stderr
    assert [orjson.loads(line)["path"] for line in proc.stdout.splitlines()] == [str(CLEAN)]
    assert "raw.jsonl" in one_line(proc)


def test_ls_of_a_directory_notes_a_stray_file_but_does_not_fail(
    strays: dict[str, Path], tmp_path: Path
) -> None:
    shutil.copy(CLEAN, tmp_path / "clean.jsonl")
    proc = invoke("ls", "--format", "json", str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert len(proc.stdout.splitlines()) == 1
    said = proc.stderr.decode()
    assert "raw.jsonl" in said and "log.jsonl" in said
    assert "empty.jsonl" not in said  # (a session starting: its start record comes next)


def test_ls_of_a_directory_with_an_unreadable_recording_is_exit_2(tmp_path: Path) -> None:
    _, prefix = unreadable(tmp_path)
    shutil.copy(CLEAN, tmp_path / "clean.jsonl")
    proc = run(prefix, "ls", "--format", "json", str(tmp_path))
    assert proc.returncode == 2, proc.stderr  # a session is there that could not be listed
    assert len(proc.stdout.splitlines()) == 1 and "noperm.jsonl" in one_line(proc)


def test_ls_of_standard_input_is_a_usage_error() -> None:
    proc = invoke("ls", "-", input=CLEAN.read_bytes())
    assert proc.returncode == 2 and "standard input" in one_line(proc)


def test_the_default_directory_not_made_yet_is_no_recordings(tmp_path: Path) -> None:
    none = tmp_path / "none"
    env = {"ACP_PROXY_RECORD_DIR": str(none)}
    listed = invoke("ls", env=env)
    assert listed.returncode == 0 and listed.stdout == b"", listed.stderr
    assert one_line(listed) == f"acp-proxy ls: no recordings yet in {none}"
    assert invoke("ls", "--format", "json", env=env).returncode == 0
    found = invoke("search", "x", env=env)
    assert found.returncode == 1 and found.stdout == b"" and found.stderr == b""
    assert not none.exists()


def test_a_directory_named_that_does_not_exist_stays_an_error(tmp_path: Path) -> None:
    none = str(tmp_path / "none")
    for command in (["ls", none], ["search", "x", none]):
        proc = invoke(*command)
        assert (
            proc.returncode == 2
            and one_line(proc) == f"acp-proxy {command[0]}: {none}: no such file or directory"
        )


# --- search ------------------------------------------------------------------------------------


def test_search_of_a_file_that_is_no_recording_is_exit_2_even_with_a_match(
    strays: dict[str, Path],
) -> None:
    for path in strays.values():
        assert invoke("search", "x", str(path)).returncode == 2, path
    proc = invoke("search", "session/prompt", str(CLEAN), str(strays["raw"]))
    assert proc.returncode == 2 and proc.stdout  # as grep: 2 wins over 0
    assert "raw.jsonl" in one_line(proc)


def test_search_of_an_unreadable_file_is_exit_2(tmp_path: Path) -> None:
    path, prefix = unreadable(tmp_path)
    proc = run(prefix, "search", "x", str(path))
    assert proc.returncode == 2 and "Permission denied" in one_line(proc)


def test_search_in_a_directory_with_a_stray_file_does_not_fail(
    strays: dict[str, Path], tmp_path: Path
) -> None:
    shutil.copy(CLEAN, tmp_path / "clean.jsonl")
    assert invoke("search", "session/prompt", str(tmp_path)).returncode == 0
    assert invoke("search", "no-such-thing-anywhere", str(tmp_path)).returncode == 1


def test_search_reads_standard_input_as_dash() -> None:
    proc = invoke("search", "session/prompt", "-", input=CLEAN.read_bytes())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(b"(standard input):")
    hit = orjson.loads(
        invoke(
            "search", "--format", "json", "session/prompt", "-", input=CLEAN.read_bytes()
        ).stdout.splitlines()[0]
    )
    assert hit["path"] == "(standard input)"
    nothing = invoke("search", "no-such-thing-anywhere", "-", input=CLEAN.read_bytes())
    assert nothing.returncode == 1


# --- inspect -----------------------------------------------------------------------------------


def test_inspect_refuses_a_file_that_is_no_recording_before_serving(
    strays: dict[str, Path],
) -> None:
    for name in ("log", "raw", "empty", "binary"):
        proc = invoke("inspect", str(strays[name]))
        assert proc.returncode == 2, (name, proc.stderr)
        assert "http://" not in one_line(proc)


def test_inspect_refuses_an_unreadable_file(tmp_path: Path) -> None:
    path, prefix = unreadable(tmp_path)
    proc = subprocess.run(
        [*prefix, *PROXY, "inspect", str(path)], capture_output=True, env=clean_env(), timeout=30
    )
    assert proc.returncode == 2 and "Permission denied" in one_line(proc)


def test_inspect_serves_an_empty_file_a_session_is_recording(tmp_path: Path) -> None:
    """An empty file the recorder holds is a recording about to be written: served."""
    path = tmp_path / "starting.jsonl"
    with open(path, "wb") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with subprocess.Popen(
            [*PROXY, "inspect", str(path)], stderr=subprocess.PIPE, env=clean_env()
        ) as proc:
            assert proc.stderr is not None
            try:
                assert b"http://127.0.0.1" in proc.stderr.readline()
            finally:
                proc.terminate()
                proc.wait(10)


# --- show and diff: options without effect -----------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [["--violations"], ["--from", "agent"], ["--method", "x*"], ["--revalidate"]],
)
def test_show_conversation_refuses_a_filter_it_cannot_apply(options: list[str]) -> None:
    proc = invoke("show", "--conversation", *options, str(CLEAN))
    assert proc.returncode == 2, proc.stderr
    assert f"{options[0]} has no effect with --conversation" in one_line(proc)
    typed = invoke("show", "--format", "json", *options, str(CLEAN))
    assert typed.returncode == 2 and "with --format json" in one_line(typed)


def test_json_output_refuses_color() -> None:
    for command in (
        ["show", "--format", "json", "--color", "always", str(CLEAN)],
        ["diff", "--format", "json", "--color", "always", str(CLEAN), str(MISBEHAVING)],
    ):
        proc = invoke(*command)
        assert proc.returncode == 2, command
        assert "--color has no effect with --format json" in one_line(proc)
    # set in the environment, it is for the commands it fits
    env = {"ACP_PROXY_COLOR": "always"}
    assert invoke("show", "--format", "json", str(CLEAN), env=env).returncode == 0


def test_diff_refuses_slower_without_the_timing_layer() -> None:
    proc = invoke("diff", "--only", "conversation", "--slower", "3", str(CLEAN), str(CLEAN))
    assert proc.returncode == 2 and "--slower" in one_line(proc) and "timing" in one_line(proc)
    kept = invoke("diff", "--only", "timing,wire", "--slower", "3", str(CLEAN), str(CLEAN))
    assert kept.returncode == 0, kept.stderr


def test_show_seq_names_the_option_as_typed() -> None:
    proc = invoke("show", "--format", "json", "--seq", "3", str(CLEAN))
    assert proc.returncode == 2 and "--format json" in one_line(proc)
    assert "--json" not in one_line(proc)
    proc = invoke("show", "--conversation", "--seq", "3", str(CLEAN))
    assert proc.returncode == 2 and "--conversation" in one_line(proc)


def test_one_line_is_the_first_line(strays: dict[str, Path]) -> None:
    said = one_line(invoke("ls", str(strays["log"])))
    assert "in the first line" in said and "first 1 lines" not in said


# --- colour ------------------------------------------------------------------------------------


def test_a_dumb_terminal_gets_no_colour() -> None:
    command = [*PROXY, "show", str(MISBEHAVING)]
    assert SGR.decode() in on_a_terminal(command, TERM="xterm-256color")
    assert SGR.decode() not in on_a_terminal(command, TERM="dumb")
    forced = [*PROXY, "show", "--color", "always", str(MISBEHAVING)]
    assert SGR.decode() in on_a_terminal(forced, TERM="dumb")


def test_a_start_record_from_a_newer_format_is_shown_without_none_and_said_once(
    tmp_path: Path,
) -> None:
    """A start record with no pid and no argv shows neither (no ``None``, no empty part);
    a format this version does not write (``acp-proxy/99``) is read, with one warning."""
    path = tmp_path / "f99.jsonl"
    path.write_text('{"kind":"start","t":"2026-11-29T21:05:04.707852Z","format":"acp-proxy/99"}\n')
    proc = invoke("show", "--color", "never", str(path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == "── session started 2026-11-29T21:05:04.707852Z\n"
    said = proc.stderr.decode().splitlines()
    assert len(said) == 1 and "warning" in said[0] and "acp-proxy/99" in said[0], said
    assert "newer acp-proxy" in said[0]
    clean = invoke("show", "--color", "never", str(RECORDINGS / "clean.jsonl"))
    assert clean.stderr == b"" and b"agent pid " in clean.stdout.splitlines()[0]
