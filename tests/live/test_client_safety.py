"""The client core against agents that attack it (``tests/hostile_agent.py``): the sandbox
cannot be raced, memory does not follow the agent's wishes, nothing it starts outlives us.
Each test here failed on the client core before it was one (the issue's figures in each)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import orjson
import pytest

from acp_proxy.live import sandbox as sandbox_module
from acp_proxy.live.client import Client, Event, Services, initialize_params
from acp_proxy.live.services import MAX_TERMINALS_KEPT, TERMINAL_OUTPUT_CAP
from acp_proxy.log import get_logger
from acp_proxy.transcript import beneath
from tests.conftest import HERE, PROXY, SCRIPTED_AGENT

HOSTILE = [sys.executable, str(HERE / "hostile_agent.py")]
PROBE_AGENT = [sys.executable, str(HERE / "probe_agent.py")]


def turn(client: Client, timeout: float = 60) -> list[Event]:
    """initialize, session/new and one prompt; the turn's events."""
    assert client.call("initialize", initialize_params(1, client.services), 10).ok
    assert client.services is not None
    cwd = str(client.services.sandbox)
    session = client.call("session/new", {"cwd": cwd, "mcpServers": []}, 10).result["sessionId"]
    params = {"sessionId": session, "prompt": [{"type": "text", "text": "go"}]}
    prompt = client.request("session/prompt", params)
    events = []
    while not prompt.done():
        events.append(client.next_event(timeout))
    return events


def result_of(events: list[Event]) -> dict:
    (found,) = [e.params for e in events if e.method == "_result"]
    return found


def swap_setup(tmp_path: Path) -> tuple[Path, Path]:
    root, out = tmp_path / "sandbox", tmp_path / "outside"
    (root / "dir").mkdir(parents=True)
    out.mkdir()
    (root / "dir" / "name").write_text("inside")
    (out / "name").write_text("OUTSIDE")
    return root, out


@pytest.fixture(params=["openat2", "one component at a time"])
def resolution(request, monkeypatch):
    """Both ways of resolving beneath the sandbox: the kernel's openat2 where it has it,
    and the walk with O_NOFOLLOW that stands in for it elsewhere."""
    if request.param != "openat2":
        monkeypatch.setattr(beneath, "has_openat2", False)
    return request.param


def test_a_directory_swapped_for_a_symlink_never_leaks_a_file_outside(tmp_path, resolution):
    """2,000 reads while the agent swaps a directory of the sandbox for a symlink to one
    outside and back (before: 337 of 2,000 answers came from outside)."""
    root, out = swap_setup(tmp_path)
    services = Services(root)
    argv = [*HOSTILE, "swap-read", str(root), str(out), "2000"]
    with Client.start(argv, services, get_logger(), no_record=True) as client:
        found = result_of(turn(client))
    assert found["leaks"] == 0
    assert found["answered"] > 0  # (some reads land between swaps: the test can fail)


def test_a_write_through_a_swapped_directory_never_lands_outside(tmp_path, resolution):
    """1,500 writes while the directory is swapped (before: 275 landed outside)."""
    root, out = swap_setup(tmp_path)
    (out / "name").unlink()
    services = Services(root)
    argv = [*HOSTILE, "swap-write", str(root), str(out), "1500"]
    with Client.start(argv, services, get_logger(), no_record=True) as client:
        found = result_of(turn(client))
    assert found["answered"] > 0
    assert not (out / "name").exists()
    assert os.listdir(out) == []


def test_a_hard_link_in_the_sandbox_does_not_change_the_file_outside(tmp_path):
    """The agent writes to a name that is a hard link to a file outside: the name gets the
    new content, the file outside keeps its own (before: written in place)."""
    root = tmp_path / "sandbox"
    root.mkdir()
    (root / "notes.txt").write_text("line one\n")
    outside = tmp_path / "precious.txt"
    outside.write_text("precious\n")
    os.link(outside, root / "notes.txt.written")
    services = Services(root)
    with Client.start([*PROBE_AGENT, "fs", str(root / "notes.txt")], services, get_logger(),
                      no_record=True) as client:  # fmt: skip
        turn(client)
    assert (root / "notes.txt.written").read_text() == "read: line one\n"
    assert outside.read_text() == "precious\n"


@pytest.mark.parametrize("name", ["é" * 118 + "x", "文" * 79, "a" * 255, "é" * 127 + "a"],
                         ids=["237 bytes of é", "237 bytes of 文", "255 bytes", "255 of é"])  # fmt: skip
def test_a_long_valid_file_name_can_be_written(tmp_path, name):
    """A name up to NAME_MAX (255) bytes in UTF-8 is written and replaced (before: its
    temporary name was cut at 200 characters, not bytes, and 237 bytes of 2- or 3-byte
    characters could not be written: ENAMETOOLONG)."""
    assert len(name.encode()) in (237, 255)
    box = sandbox_module.Sandbox(tmp_path)
    for content in (b"first\n", b"second\n"):
        box.write(str(tmp_path / name), content)
        assert (tmp_path / name).read_bytes() == content
    assert [p.name for p in tmp_path.iterdir()] == [name]  # (no temporary left behind)


#: A front-end over the hostile agent, in a process of its own, that prints its peak memory.
PEAK_DRIVER = textwrap.dedent("""
    import resource, sys, time
    from pathlib import Path
    from acp_proxy.live.client import Client, Services, TimedOut, initialize_params
    from acp_proxy.log import get_logger
    sandbox, seconds, allow_terminal, argv = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4:]
    services = Services(Path(sandbox), allow_terminal=allow_terminal == "yes")
    client = Client.start(argv, services, get_logger(), no_record=True)
    client.call("initialize", initialize_params(1, services), 10)
    if allow_terminal == "yes":
        new = client.call("session/new", {"cwd": sandbox, "mcpServers": []}, 10)
        params = {"sessionId": new.result["sessionId"], "prompt": [{"type": "text", "text": "x"}]}
        client.request("session/prompt", params)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        try:
            client.next_event(0.2)
        except TimedOut:
            pass
    print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
    client.close()
""")


def peak_mib(tmp_path: Path, seconds: float, argv: list[str], terminal: bool = False) -> int:
    done = subprocess.run(
        [sys.executable, "-c", PEAK_DRIVER, str(tmp_path), str(seconds),
         "yes" if terminal else "no", *argv],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    return int(done.stdout.split()[-1])


def test_a_read_flood_from_an_agent_that_reads_no_answer_stays_bounded(tmp_path):
    """400 reads of an 8 MiB file by an agent that never reads an answer (before: 2 GiB in
    8 s): no more is served than the agent takes."""
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * (8 * 1024 * 1024 - 16))
    peak = peak_mib(tmp_path, 8, [*HOSTILE, "read-flood", str(big), "400"])
    # (about 100 MiB here, also under coverage; 384 and 556 once each under coverage on a
    # loaded machine: what waits to be served grows while the client is starved of CPU;
    # unbounded: 2 GiB in 8 s, and growing)
    print(f"peak {peak} MiB")
    assert peak < 1024, f"peak {peak} MiB"


def test_a_terminal_asking_for_a_terabyte_of_output_gets_our_cap(tmp_path):
    """``outputByteLimit: 10**12`` on `yes`: the output kept is under our cap (before: 1.5
    GiB in 4 s)."""
    services = Services(tmp_path, allow_terminal=True)
    with Client.start([*HOSTILE, "terminal-flood"], services, get_logger(),
                      no_record=True) as client:  # fmt: skip
        found = result_of(turn(client))
    assert 0 < found["longest"] <= TERMINAL_OUTPUT_CAP
    assert services.ran == [["yes", "y" * 1000]]


def test_a_command_started_in_the_background_of_a_terminal_is_killed_with_it(tmp_path):
    """`sh -c 'sleep 300 &'` as an allowed terminal: the sleep is killed when the terminal
    is released (before: it outlived the probe)."""
    pidfile = tmp_path / "sleep.pid"
    services = Services(tmp_path, allow_terminal=True)
    with Client.start([*HOSTILE, "background", str(pidfile)], services, get_logger(),
                      no_record=True) as client:  # fmt: skip
        turn(client)
        pid = int(pidfile.read_text())
        assert gone(pid), "the background command outlived its terminal's release"


def gone(pid: int, within: float = 10.0) -> bool:
    """Whether process ``pid`` ends (or is a zombie) within ``within`` seconds."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state == "Z":
            return True
        time.sleep(0.05)
    return False


def start_record(path: Path, within: float = 10.0) -> dict:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if path.exists() and path.read_bytes().endswith(b"\n"):
            return orjson.loads(path.read_bytes().splitlines()[0])
        time.sleep(0.05)
    raise AssertionError("no start record")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups as on Linux")
def test_an_agent_that_ignores_sigterm_goes_when_the_proxy_is_killed(tmp_path):
    """The proxy SIGKILLed under an agent that ignores SIGTERM (before: it ran on)."""
    record = tmp_path / "rec.jsonl"
    marker = tmp_path / "terms"
    with subprocess.Popen(
        [*PROXY, "run", "--record", str(record), "--", *SCRIPTED_AGENT, "stubborn", str(marker)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    ) as proxy:  # fmt: skip
        assert proxy.stdout is not None
        assert proxy.stdout.readline() == b'{"ready":true}\n'
        pid = start_record(record)["pid"]
        proxy.send_signal(signal.SIGKILL)
        proxy.wait()
    assert gone(pid), "the agent outlived the proxy"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="process groups as on Linux")
def test_the_child_of_a_wrapper_script_goes_when_the_proxy_is_killed(tmp_path):
    """An agent's own child (a wrapper script's agent) goes too (before: it ran on)."""
    pidfile = tmp_path / "grandchild.pid"
    with subprocess.Popen(
        [*PROXY, "run", "--no-record", "--", *SCRIPTED_AGENT, "grandchild", str(pidfile)],
        stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    ) as proxy:  # fmt: skip
        deadline = time.monotonic() + 10
        while not (pidfile.exists() and pidfile.read_text().strip()):
            if time.monotonic() > deadline:
                proxy.kill()
                raise AssertionError("no grandchild")
            time.sleep(0.05)
        pid = int(pidfile.read_text())
        proxy.send_signal(signal.SIGKILL)
        proxy.wait()
    assert gone(pid), "the agent's child outlived the proxy"


class Said:
    """A log that keeps what it is told (the client core's log, in-process)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def _say(self, event: str, **values: object) -> None:
        self.lines.append(event)

    debug = info = warning = error = exception = _say

    def is_enabled_for(self, level: int) -> bool:
        return False


def test_every_error_is_kept_whatever_comes_before_it(tmp_path):
    """10,050 warnings, then an error: the error is among the findings (before: a cap on
    findings kept the first 10,000 and hid it), and every finding is counted."""
    agent = tmp_path / "noisy.py"
    agent.write_text(
        textwrap.dedent("""
        import json, os, sys
        line = sys.stdin.buffer.readline()
        ident = json.loads(line)["id"]
        out = [""] * 10_050  # blank lines: a warning each
        out.append("not json at all")  # an error
        out.append(json.dumps({"jsonrpc": "2.0", "id": ident, "result": {"protocolVersion": 1}}))
        os.write(1, ("\\n".join(out) + "\\n").encode())
        sys.stdin.buffer.read()
    """)
    )
    services = Services(tmp_path)
    said = Said()
    with Client.start([sys.executable, str(agent)], services, said, no_record=True) as client:
        client.call("initialize", initialize_params(1, services), 30)
    assert client.counts["warning"] >= 10_050
    errors = [f.rule for f in client.findings if f.level == "error"]
    assert errors, (client.counts, len(client.findings))
    assert any("further warnings are counted, not kept" in line for line in said.lines)


class AskingUser(Services):
    """A front-end whose user takes their time to answer a permission request."""

    def __init__(self, sandbox: Path, **options: object) -> None:
        super().__init__(sandbox, **options)  # type: ignore[arg-type]
        self.user_answers = threading.Event()

    def request_permission(self, params: dict) -> dict:
        self.user_answers.wait(60)
        return super().request_permission(params)


@pytest.mark.parametrize("kind", ["terminal", "permission"])
def test_long_waits_then_a_burst_of_reads_never_stop_the_relay(tmp_path, kind):
    """Ten requests that wait long (on a command that runs 300 s, or on the user), then 30
    reads at once: every read is answered and the turn ends (before: the relay stopped
    reading the agent at 16 requests in service and went on only below 8, which the ten
    waits never let it reach: the session froze for good)."""
    (tmp_path / "notes.txt").write_text("line one\n")
    services = AskingUser(tmp_path, allow_terminal=True)
    argv = [*HOSTILE, "waits-then-reads", kind, str(tmp_path / "notes.txt")]
    try:
        with Client.start(argv, services, get_logger(), record=str(tmp_path / "rec.jsonl")) as c:
            found = result_of(turn(c, timeout=25))
            services.user_answers.set()
    finally:
        services.user_answers.set()
    assert found == {"reads": 30}
    answers = [r["msg"] for r in map(orjson.loads, (tmp_path / "rec.jsonl").read_bytes().splitlines())
               if r.get("from") == "client" and "id" in r.get("msg", {}) and "method" not in r["msg"]]  # fmt: skip
    waits = [a for a in answers if "exitCode" in str(a) or "outcome" in str(a)]
    assert len(waits) == 10, answers[-12:]


def children() -> list[int]:
    """The processes whose parent is this one."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError):
            fields = stat.read_text().rsplit(")", 1)[1].split()
            if int(fields[1]) == os.getpid():
                found.append(int(stat.parent.name))
    return found


def test_terminals_never_released_are_bounded_and_keep_no_process(tmp_path):
    """40 terminals of `true`, none released: 32 are kept (their output, for the agent),
    the others refused with an error that says why; a command that exited keeps no process
    (before: all 40 kept, each with its watchdog for good: 300 of them made 304 processes
    and 328 MiB)."""
    services = Services(tmp_path, allow_terminal=True)
    before = set(children())
    with Client.start([*HOSTILE, "terminals", "40"], services, get_logger(),
                      no_record=True) as client:  # fmt: skip
        found = result_of(turn(client))
        deadline = time.monotonic() + 10
        while len(set(children()) - before) > 2 and time.monotonic() < deadline:
            time.sleep(0.1)  # (the agent and its watchdog are left)
        left = set(children()) - before
    assert found["created"] == MAX_TERMINALS_KEPT
    assert [e["message"] for e in found["errors"]] == [
        f"{MAX_TERMINALS_KEPT} terminals are not released: release one first"
    ] * (40 - MAX_TERMINALS_KEPT)
    assert len(left) <= 2, f"{len(left)} processes left"


def test_requests_that_wait_are_bounded_and_one_more_gets_an_error(tmp_path):
    """70 permission requests the user has not answered yet, then 30 reads: 64 wait (a
    thread each), the 6 beyond get an error at once, and the reads are still answered."""
    from acp_proxy.live.client import MAX_WAITING

    (tmp_path / "notes.txt").write_text("line one\n")
    services = AskingUser(tmp_path)
    argv = [*HOSTILE, "waits-then-reads", "permission", str(tmp_path / "notes.txt"), "70"]
    try:
        with Client.start(argv, services, get_logger(), record=str(tmp_path / "rec.jsonl")) as c:
            found = result_of(turn(c, timeout=25))
            services.user_answers.set()
    finally:
        services.user_answers.set()
    assert found == {"reads": 30}
    lines = (tmp_path / "rec.jsonl").read_bytes().splitlines()
    errors = [r["msg"]["error"]["message"] for r in map(orjson.loads, lines)
              if r.get("from") == "client" and "error" in r.get("msg", {})]  # fmt: skip
    assert errors == [f"{MAX_WAITING} requests of the agent's wait already; answer one first"] * (
        70 - MAX_WAITING
    )
