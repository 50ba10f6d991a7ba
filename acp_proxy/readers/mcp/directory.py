"""The recordings of ``acp-proxy mcp``'s directory, each opened beneath it, never outside."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from acp_proxy.core.visible import visible
from acp_proxy.readers.annotate import RUN, read
from acp_proxy.readers.mcp.paging import NAME_CHARS, ToolError, cut
from acp_proxy.transcript.beneath import Outside, open_beneath
from acp_proxy.transcript.items import Annotated, Repeated
from acp_proxy.transcript.reading import open_lines

__all__ = ["Recordings"]


class Recordings:
    """The recordings of one directory, each opened beneath it, never outside."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _dir(self) -> int:
        try:
            return os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except OSError as exc:
            raise ToolError(f"cannot open the recordings directory: {exc.strerror}") from None

    def names(self) -> list[str]:
        """The ``.jsonl`` regular files of the directory (a symlink is none), sorted."""
        try:
            dirfd = self._dir()
        except ToolError:
            return []
        try:
            found = []
            for name in os.listdir(dirfd):
                if not name.endswith(".jsonl"):
                    continue
                try:
                    info = os.stat(name, dir_fd=dirfd, follow_symlinks=False)
                except OSError:
                    continue
                if stat.S_ISREG(info.st_mode):
                    found.append(name)
            return sorted(found)
        finally:
            os.close(dirfd)

    def open(self, name: Any) -> tuple[int, os.stat_result]:
        """A descriptor of the regular file ``name`` beneath the directory, and its status."""
        if not isinstance(name, str):
            raise ToolError("file must be a string: a recording's name in the directory")
        name = self._as_listed(name)
        dirfd = self._dir()
        try:
            fd = open_beneath(dirfd, name, os.O_RDONLY | os.O_NONBLOCK)
        except Outside as exc:
            raise ToolError(f"refused: {cut(str(exc), NAME_CHARS)}") from None
        except OSError as exc:
            raise ToolError(_refusal(name, exc)) from None
        finally:
            os.close(dirfd)
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            os.close(fd)
            raise ToolError(f"{cut(name, NAME_CHARS)} is not a regular file: no recording")
        os.set_blocking(fd, True)
        return fd, info

    def _as_listed(self, name: str) -> str:
        """The file ``name`` is, as :meth:`names` lists it escaped (a name with a control
        character in it is listed as ``\\x1b``: that form is taken back); else ``name``."""
        if visible(name) != name or "\\" not in name:
            return name
        for listed in self.names():
            if listed != name and visible(listed) == name:
                return listed
        return name

    def lines(self, name: Any, flat: bool = True) -> Iterator[tuple[int, bytes]]:
        """The numbered lines of recording ``name`` (:func:`open_lines`, named by ``name``):
        ``flat``, a line recorded past the cap is read in flat memory (its beginning)."""
        fd, _ = self.open(name)
        return open_lines(name, opened=fd, flat=flat)

    def items(
        self, name: Any, validate: bool = True, flat: bool = True
    ) -> Iterator[Annotated | Repeated]:
        """The items of recording ``name``, as every reader reads them (``flat``: in flat
        memory; only a frame asked for by its seq is read whole, to be paged)."""
        return read(self.lines(name, flat), validate=validate, run=RUN)


def _refusal(name: str, exc: OSError) -> str:
    name = cut(name, NAME_CHARS)
    if exc.errno in (errno.EXDEV, errno.ELOOP):
        return f"refused: {name} leads out of the recordings directory (a symbolic link)"
    if exc.errno == errno.ENOENT:
        return f"no recording named {name} (list_recorded_sessions names them)"
    return f"cannot open {name}: {exc.strerror}"
