"""``run --addon FILE[:NAME]``: the user's own addons, loaded from a Python file, or one
clear line saying why not (never a traceback)."""

from __future__ import annotations

from pathlib import Path

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
