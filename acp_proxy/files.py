"""Every file acp-proxy writes besides recordings (a report, a redacted copy, the log), made
the way a recording is: where, and as, the user meant.

- never through a symlink planted at the path (``O_NOFOLLOW``): a report's default path
  sits beside a recording someone else may have sent, in a directory they may write to;
- never waiting on a FIFO or a device (``O_NONBLOCK``; a FIFO, a socket or a directory is
  refused, a character device such as ``/dev/null`` is the user's explicit choice);
- ``-`` is standard output where a command says so (``report -o -``, ``redact -o -``);
- created ``0600`` (these files hold what the recording holds: prompts, file contents,
  maybe credentials), unless the path already exists as the user's own regular file, whose
  mode is kept; a file of another user is refused;
- whole or not at all where a command says so (:func:`whole`: ``redact``, ``report``): written
  beside, then renamed over, so Ctrl-C or an error never leaves half a copy that reads as a
  shorter one.

:class:`Refused` says why, in words for the user. Opening is the only I/O here.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterator
from pathlib import Path

__all__ = ["Refused", "open_output", "whole"]

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK


class Refused(OSError):
    """A path acp-proxy will not write to; ``strerror`` says why."""


def open_output(path: str, append: bool = False, dash: bool = False) -> int:
    """A file descriptor to write ``path`` (truncated, or appended to); with ``dash``,
    ``-`` is a copy of standard output's. Raises :class:`Refused` for a symlink, a FIFO,
    a socket or another user's file, and ``OSError`` for what the system refuses (a
    missing directory, permissions)."""
    if dash and path == "-":
        return os.dup(1)
    flags = _FLAGS | (os.O_APPEND if append else 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Refused(errno.ELOOP, "it is a symbolic link (not followed)", path) from None
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads
            raise Refused(errno.ENXIO, "it is a FIFO, not a regular file", path) from None
        if exc.errno == errno.EISDIR:
            raise Refused(errno.EISDIR, "it is a directory", path) from None
        raise
    try:
        info = os.fstat(fd)
        mode = info.st_mode
        if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
            raise Refused(errno.EINVAL, "it is a FIFO or a socket, not a regular file", path)
        if stat.S_ISREG(mode) and info.st_uid != os.geteuid():
            raise Refused(errno.EPERM, "it belongs to another user", path)
        if stat.S_ISREG(mode) and not append:
            os.ftruncate(fd, 0)  # only once it is known to be the user's own file
        if not stat.S_ISCHR(mode):
            os.set_blocking(fd, True)  # a regular file: writes complete
    except BaseException:
        os.close(fd)
        raise
    return fd


@contextlib.contextmanager
def whole(path: str) -> Iterator[str]:
    """The path to write instead of ``path``: a new file beside it (made as
    :func:`open_output` makes one, the mode of the file it replaces kept), renamed over
    ``path`` once the block ends, removed if it raises (an error, Ctrl-C). A character
    device (``/dev/null``) is written as it is; what :func:`open_output` refuses is refused
    here too, before anything is written."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        info = None
    if info is not None and (stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode)):
        yield path
        return
    refused = info is not None and (not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid())
    if refused:  # open_output says why, in its words
        os.close(open_output(path, append=True))
        raise Refused(errno.EINVAL, "it is not a regular file", path)  # (not reached)
    target = Path(path)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = temporary = None
    for attempt in range(100):  # (a name left by a process that was killed is skipped)
        temporary = target.with_name(f".{target.name}.{os.getpid()}.{attempt}.part")
        try:
            fd = os.open(temporary, flags, 0o600)
            break
        except FileExistsError:
            continue
    if fd is None or temporary is None:
        raise FileExistsError(errno.EEXIST, "no temporary name is free beside it", path)
    try:
        try:
            if info is not None:
                os.fchmod(fd, stat.S_IMODE(info.st_mode))
        finally:
            os.close(fd)
        yield str(temporary)
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temporary.unlink()
        raise
