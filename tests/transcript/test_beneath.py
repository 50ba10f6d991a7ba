"""open_beneath: a name opened beneath a directory descriptor, never a file outside it, with
openat2 and with the walk that stands in for it where the kernel has none."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from acp_proxy.transcript import beneath
from acp_proxy.transcript.beneath import Outside, open_beneath


@pytest.fixture(params=["openat2", "walk"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "walk":
        monkeypatch.setattr(beneath, "has_openat2", False)
    return str(request.param)


@pytest.fixture
def root(tmp_path: Path) -> Iterator[int]:
    inside = tmp_path / "in"
    (inside / "deep").mkdir(parents=True)
    (inside / "deep" / "a.jsonl").write_text("inside\n")
    (tmp_path / "secret.jsonl").write_text("outside\n")
    (inside / "link.jsonl").symlink_to(tmp_path / "secret.jsonl")
    (inside / "up").symlink_to(tmp_path)
    fd = os.open(inside, os.O_RDONLY | os.O_DIRECTORY)
    yield fd
    os.close(fd)


def read(fd: int) -> str:
    with os.fdopen(fd, "r") as file:
        return file.read()


def test_a_name_beneath_opens(way: str, root: int) -> None:
    assert read(open_beneath(root, "deep/a.jsonl")) == "inside\n"
    assert read(open_beneath(root, "./deep//a.jsonl")) == "inside\n"


@pytest.mark.parametrize("name", ["../secret.jsonl", "deep/../../secret.jsonl", "/etc/passwd", ""])
def test_a_name_that_leaves_as_written_is_outside(way: str, root: int, name: str) -> None:
    with pytest.raises(Outside):
        open_beneath(root, name)


@pytest.mark.parametrize("name", ["link.jsonl", "up/secret.jsonl", "up/in/deep/a.jsonl"])
def test_a_symlink_that_leads_out_is_refused(way: str, root: int, name: str) -> None:
    with pytest.raises(OSError) as caught:
        open_beneath(root, name)
    assert not isinstance(caught.value, FileNotFoundError)
