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
