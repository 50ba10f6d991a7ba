"""``run --addon FILE[:NAME]``: the user's own addons, loaded from a Python file, or one
clear line saying why not (never a traceback)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from acp_proxy.live.user_addons import AddonFileError, load_addons, split_spec
from acp_proxy.transcript.items import Addon

VIEW = """
import acp_proxy


class Count(acp_proxy.Addon):
    def __init__(self):
        self.n = 0

    def add(self, item):
        self.n += 1


addons = [Count()]
other = Count
both = (Count, Count())
"""


def write(tmp_path: Path, text: str, name: str = "view.py") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_the_addons_list_or_the_named_thing_is_loaded(tmp_path):
    path = write(tmp_path, VIEW)
    (default,) = load_addons(str(path))
    assert isinstance(default, Addon) and type(default).__name__ == "Count"
    assert default.name == f"the addon Count ({path}:addons)"  # (what the log says of it)
    (made,) = load_addons(f"{path}:other")  # a class: made with no arguments
    assert isinstance(made, Addon) and made is not default
    assert [type(a).__name__ for a in load_addons(f"{path}:both")] == ["Count", "Count"]


def test_a_path_with_a_colon_is_a_path(tmp_path):
    odd = tmp_path / "a:b"
    odd.mkdir()
    path = write(odd, VIEW)
    assert split_spec(str(path)) == (path, None)
    assert split_spec(f"{path}:other") == (path, "other")
    assert len(load_addons(str(path))) == 1


@pytest.mark.parametrize(
    ("text", "spec_tail", "said"),
    [
        (None, "", "no such file"),
        ("def broken(:\n", "", ":1: SyntaxError"),
        ("raise RuntimeError('boom')\n", "", "RuntimeError: boom"),
        ("import sys\nsys.exit(3)\n", "", "exited while loading (3)"),
        ("x = 1\n", "", "defines no `addons` list"),
        (VIEW, ":missing", "has no missing"),
        ("addons = [42]\n", "", "42 is not an acp_proxy.Addon"),
        ("addons = []\n", "", "is empty"),
        (
            "import acp_proxy\nclass A(acp_proxy.Addon):\n    def __init__(self, x): pass\n"
            "addons = [A]\n",
            "",
            "A() failed: TypeError",
        ),
    ],
)
def test_a_file_that_gives_no_addons_is_one_line_saying_why(tmp_path, text, spec_tail, said):
    path = tmp_path / "view.py" if text is None else write(tmp_path, text)
    with pytest.raises(AddonFileError) as caught:
        load_addons(f"{path}{spec_tail}")
    message = str(caught.value)
    assert said in message and "\n" not in message and str(path) in message


def test_hostile_names_reach_the_message_escaped(tmp_path):
    path = write(tmp_path, "raise ValueError('\\x1b]52;c;aGk=\\x07 gotcha')\n")
    with pytest.raises(AddonFileError) as caught:
        load_addons(str(path))
    assert "\x1b" not in str(caught.value) and "\x07" not in str(caught.value)


FRAMES_PER_METHOD = """
import json
import acp_proxy


class FramesPerMethod(acp_proxy.Addon):
    def __init__(self):
        self.methods = {}

    def add(self, item):
        if item.message is not None:
            method = item.message.method or "?"
            self.methods[method] = self.methods.get(method, 0) + 1

    def done(self, exit_status, reason):
        print("frames per method:", json.dumps(self.methods, sort_keys=True))


addons = [FramesPerMethod()]
"""


def test_run_hands_the_session_to_the_users_view_which_reads_the_recording_alike(
    tmp_path, run_proxy
):
    """``run --addon view.py``: the view sees the session live (what it prints goes to
    stderr, never to the editor's stdout, which is byte for byte what it is without it);
    the same class fed the recording counts the same."""
    import json
    import runpy

    import orjson

    import acp_proxy
    from tests.conftest import SCRIPTED_AGENT
    from tests.exchanges import setup, turn

    view = write(tmp_path, FRAMES_PER_METHOD)
    messages = [*setup(2), *turn()]
    client = b"".join(orjson.dumps(m) + b"\n" for side, m in messages if side == "client")
    agent = b"".join(orjson.dumps(m) + b"\n" for side, m in messages if side == "agent")
    emitted = tmp_path / "agent.jsonl"
    emitted.write_bytes(agent)
    argv = [*SCRIPTED_AGENT, "emit", str(emitted)]
    plain = run_proxy(argv, client, ("--no-record",))
    viewed = run_proxy(argv, client, ("--addon", str(view)))
    assert viewed.returncode == plain.returncode == 0, viewed.stderr
    assert viewed.stdout == plain.stdout == agent
    said = [line for line in viewed.stderr.splitlines() if "frames per method:" in line]
    assert len(said) == 1
    live = json.loads(said[0].split("frames per method:", 1)[1])
    offline = runpy.run_path(str(view))["FramesPerMethod"]()
    offline.feed(acp_proxy.read(viewed.transcript))
    assert live == offline.methods and live["session/update"] >= 1
    assert sum(live.values()) == len(messages)


def test_run_refuses_an_addon_file_that_gives_none_before_anything_crosses(tmp_path, run_proxy):
    """A file that cannot give addons: exit 2, one line, the agent stopped unread."""
    from tests.conftest import SCRIPTED_AGENT

    broken = write(tmp_path, "addons = [1]\n")
    seen = tmp_path / "seen"
    result = run_proxy([*SCRIPTED_AGENT, "echo", str(seen)], b"{}\n", ("--addon", str(broken)))
    assert result.returncode == 2
    assert "acp-proxy run: invalid value for '--addon'" in result.stderr
    assert "1 is not an acp_proxy.Addon" in result.stderr and "Traceback" not in result.stderr
    assert (result.stdout == b"" and not seen.exists()) or seen.read_bytes() == b""


BOOM = """
import acp_proxy


class Boom(acp_proxy.Addon):
    def add(self, item):
        raise ValueError("oops in my view")


addons = [Boom()]
"""


def test_a_failing_addon_s_traceback_is_logged_at_debug(tmp_path, run_proxy):
    """An addon that raises: one error line naming it (the session goes on, byte for byte);
    at --log-level debug, its traceback too, its file and line, as Python prints it."""
    from tests.conftest import SCRIPTED_AGENT

    boom = write(tmp_path, BOOM, "boom.py")
    seen = tmp_path / "seen"
    for level, traced in (("info", False), ("debug", True)):
        result = run_proxy([*SCRIPTED_AGENT, "echo", str(seen)], b"{}\n",
                           ("--addon", str(boom), "--log-level", level))  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert result.stderr.count(f"the addon Boom ({boom}:addons) failed") == 1, result.stderr
        where = f'File "{boom}", line 7, in add'
        assert (where in result.stderr) is traced, result.stderr
        assert ('raise ValueError("oops in my view")' in result.stderr) is traced
        # the error line names the place in the user's file, as a compiler does (PATH:LINE)
        # and, below debug, how to see the rest
        error = next(line for line in result.stderr.splitlines() if "failed" in line)
        assert f"at='{boom}:7 in add'" in error, error
        assert ("--log-level debug: its traceback" in error) is not traced, error


#: An addon with every hook a recording can fire: what it counted, printed at ``done``.
HOOKS = """
import json
import acp_proxy


class Hooks(acp_proxy.Addon):
    def __init__(self):
        self.counts = {"add": 0, "frame": 0, "stderr": 0, "end": 0, "done": 0}
        self.findings, self.exits = 0, []

    def add(self, item):
        self.counts["add"] += 1

    def frame(self, seen):
        self.counts["frame"] += 1
        self.findings += len(seen.findings)

    def stderr(self, data, t):
        self.counts["stderr"] += 1

    def end(self, findings, t):
        self.counts["end"] += 1
        self.findings += len(findings)

    def done(self, exit_status, reason):
        self.counts["done"] += 1
        self.exits.append(exit_status)
        print("hooks:", json.dumps([self.counts, self.findings, self.exits]))


addons = [Hooks()]
"""


def _session(tmp_path: Path, exit_status: int = 0) -> tuple[list[str], bytes, bytes]:
    """An agent that writes three lines to stderr, answers a clean v2 setup and turn, then
    exits with ``exit_status``; the client's bytes; the agent's."""
    import sys

    import orjson

    from tests.exchanges import setup, turn

    messages = [*setup(2), *turn()]
    client = b"".join(orjson.dumps(m) + b"\n" for side, m in messages if side == "client")
    agent = b"".join(orjson.dumps(m) + b"\n" for side, m in messages if side == "agent")
    emitted = tmp_path / "agent.jsonl"
    emitted.write_bytes(agent)
    script = (
        "import os, sys\n"
        "os.write(2, b'one\\ntwo\\nthree\\n')\n"
        f"data = open({str(emitted)!r}, 'rb').read()\n"
        "os.write(1, data)\n"
        "while os.read(0, 65536): pass\n"
        f"sys.exit({exit_status})\n"
    )
    return [sys.executable, "-c", script], client, agent


def _said(stderr: str, mark: str) -> Any:
    import json

    said = [line for line in stderr.splitlines() if line.startswith(mark)]
    assert len(said) == 1, stderr
    return json.loads(said[0][len(mark) :])


def test_every_hook_fires_alike_under_run_and_over_the_recording(tmp_path, run_proxy):
    """An addon with ``frame``, ``stderr``, ``end`` and ``done`` hooks prints the same counts
    under ``run --addon`` and fed the recording through the public ``acp_proxy.read``."""
    import contextlib
    import io
    import runpy

    import acp_proxy

    agent, client, _ = _session(tmp_path, exit_status=5)
    view = write(tmp_path, HOOKS)
    result = run_proxy(agent, client, ("--addon", str(view)))
    assert result.returncode == 5, result.stderr
    live = _said(result.stderr, "hooks: ")
    counts, _, exits = live
    assert counts["frame"] > 0 and counts["stderr"] == 3 and counts["end"] == counts["done"] == 1
    assert exits == [5]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        runpy.run_path(str(view))["Hooks"]().feed(acp_proxy.read(result.transcript))
    assert _said(printed.getvalue(), "hooks: ") == live


SLEEPS = """
import time
import acp_proxy


class Sleeps(acp_proxy.Addon):
    def add(self, item):
        time.sleep(600)


addons = [Sleeps]
"""

EXITS = """
import sys
import acp_proxy


class Exits(acp_proxy.Addon):
    def frame(self, seen):
        sys.exit(3)


addons = [Exits]
"""


@pytest.mark.parametrize(("text", "said"), [(SLEEPS, "still busy"), (EXITS, "SystemExit: 3")])
def test_an_addon_that_sleeps_or_exits_cannot_stop_the_relay(tmp_path, run_proxy, text, said):
    """The relay's bytes, the session's exit status and the transcript's end record are what
    they are without the addon; an addon that exits is named once, by its class and file."""
    agent, client, emitted = _session(tmp_path, exit_status=4)
    plain = run_proxy(agent, client, ("--no-record",))
    addon = write(tmp_path, text, "addon.py")
    result = run_proxy(agent, client, ("--addon", str(addon)), timeout=30)
    assert result.returncode == plain.returncode == 4, result.stderr
    assert result.stdout == plain.stdout == emitted
    records = result.records()
    assert records[-1]["kind"] == "end" and records[-1]["exit"] == 4
    frames = [r for r in records if r["kind"] == "frame"]
    assert len(frames) == client.count(b"\n") + emitted.count(b"\n")
    lines = [line for line in result.stderr.splitlines() if said in line]
    assert len(lines) == 1 and (text is SLEEPS or str(addon) in lines[0]), result.stderr
    assert "Traceback" not in result.stderr


def test_sigterm_ends_a_session_whose_addon_sleeps(tmp_path):
    """SIGTERM is not held by the user's addon: the session ends, its end record written."""
    import signal
    import subprocess
    import time

    from tests.conftest import PROXY, SCRIPTED_AGENT, clean_env

    addon = write(tmp_path, SLEEPS, "addon.py")
    transcript = tmp_path / "t.jsonl"
    agent = [*SCRIPTED_AGENT, "echo", str(tmp_path / "seen")]
    command = [*PROXY, "run", "--record", str(transcript), "--addon", str(addon), "--", *agent]
    with subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env(),
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"_x"}\n')
        proc.stdin.flush()
        assert proc.stdout.readline() == b'{"jsonrpc":"2.0","method":"_x"}\n'  # relayed
        time.sleep(0.5)  # (the addon is asleep by now)
        started = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=20)
        took = time.monotonic() - started
    assert took < 15
    assert transcript.read_bytes().splitlines()[-1].startswith(b'{"kind":"end"')


def test_an_addon_that_falls_behind_misses_items_counted_and_said(tmp_path):
    """The queue to the user's addons is bounded: an item that finds it full is dropped for
    them, never waited for; said once as it begins, and the count at the end."""
    import threading

    from structlog.testing import capture_logs

    from acp_proxy.live.user_addons import OffRelay
    from acp_proxy.log import get_logger
    from acp_proxy.readers.annotate import plain, read

    entered, release, seen = threading.Event(), threading.Event(), []

    class Slow(Addon):
        def add(self, item: Any) -> None:
            entered.set()
            release.wait(10)
            seen.append(item)

    path = Path(__file__).parents[2] / "recordings" / "clean.jsonl"
    items = list(plain(read(path)))
    off = OffRelay([Slow()], get_logger(), items=3, grace=10)
    with capture_logs() as logs:
        off.add(items[0])
        assert entered.wait(10)  # the thread holds the first item: three more fit
        for item in items[1:]:
            off.add(item)
        release.set()
        off.done(0, "")
    assert items[-1].record.line and type(items[-1].record).__name__ == "EndRecord"
    assert off.dropped == len(items) - 1 - 3 - 1  # the one held, three queued, the end
    assert len(seen) == len(items) - off.dropped
    said = [entry["event"] for entry in logs if entry["log_level"] == "warning"]
    assert len(said) == 2 and f"{off.dropped} items were dropped" in said[1], said


def test_the_readmes_addon_prints_the_same_live_and_over_the_recording(tmp_path, run_proxy):
    """The README's example addon (From Python), as it stands: under ``run --addon`` and run
    over the recording as a script, it prints the same line."""
    import subprocess
    import sys

    from tests.conftest import README

    text = README.read_text(encoding="utf-8").split("### From Python", 1)[1]
    example = text.split("```python\n", 1)[1].split("```", 1)[0]
    addon = write(tmp_path, example, "prompts.py")
    agent, client, _ = _session(tmp_path, exit_status=0)
    result = run_proxy(agent, client, ("--addon", str(addon)))
    assert result.returncode == 0, result.stderr
    live = [line for line in result.stderr.splitlines() if " prompts, " in line]
    offline = subprocess.run(
        [sys.executable, str(addon), str(result.transcript)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    assert live == offline == ["1 prompts, 3 stderr lines, exit 0"]
