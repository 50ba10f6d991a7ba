"""A file opened beneath a directory, with no check that can be raced: the one way a reader
opens a file a remote caller named (``acp-proxy mcp``'s tools), never a file outside.

The directory is held as a descriptor and the name is resolved beneath it by the kernel, in
the call that opens it: where there is ``openat2`` (Linux 5.6+), with ``RESOLVE_BENEATH``
(no ``..`` above it, no absolute symlink, no symlink that leads out) and
``RESOLVE_NO_MAGICLINKS``; elsewhere one component at a time, each opened with
``O_NOFOLLOW`` (a symlink anywhere is refused). :func:`openat2` is the kernel's call, the
one copy of it: :mod:`acp_proxy.live.sandbox` resolves the agent's files with it too.
"""

from __future__ import annotations

import ctypes
import errno
import os
import sys

__all__ = ["Outside", "open_beneath", "openat2"]

_SYS_OPENAT2 = 437  # the same number on every Linux architecture
_RESOLVE_NO_MAGICLINKS = 0x02
_RESOLVE_BENEATH = 0x08
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW


class Outside(ValueError):
    """A name that is not a relative path beneath the directory (absolute, or with ``..``)."""


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64), ("resolve", ctypes.c_uint64)]


def _libc_syscall() -> object | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None


_syscall = _libc_syscall()
#: Whether openat2 works here (None: not tried yet; False: the walk instead).
has_openat2: bool | None = None if _syscall is not None else False


def openat2(dirfd: int, path: str, flags: int, mode: int = 0) -> int | None:
    """``openat2(dirfd, path, flags, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)``; None where
    the kernel has none (then the caller walks), :class:`OSError` where it refuses."""
    global has_openat2  # noqa: PLW0603 - learnt once per process
    if has_openat2 is False or _syscall is None:
        return None
    how = _OpenHow(flags | os.O_CLOEXEC, mode, _RESOLVE_BENEATH | _RESOLVE_NO_MAGICLINKS)
    fd = _syscall(  # type: ignore[operator]
        ctypes.c_long(_SYS_OPENAT2),
        ctypes.c_int(dirfd),
        ctypes.c_char_p(os.fsencode(path)),
        ctypes.byref(how),
        ctypes.c_size_t(ctypes.sizeof(how)),
    )
    if fd >= 0:
        has_openat2 = True
        return int(fd)
    err = ctypes.get_errno()
    if err in (errno.ENOSYS, errno.EPERM) and has_openat2 is None:  # (EPERM: seccomp)
        has_openat2 = False
        return None
    raise OSError(err, os.strerror(err), path)


def parts_of(name: str) -> list[str]:
    """``name``'s components, refused (:class:`Outside`) unless it is a relative path that
    stays beneath the directory as written (no ``..``, not absolute, no NUL)."""
    if not name or "\x00" in name:
        raise Outside("an empty name" if not name else "a name with a NUL in it")
    if name.startswith("~"):
        raise Outside(
            f"{name} starts with ~, which is not expanded: name a file relative to the directory"
        )
    if os.path.isabs(name):
        raise Outside(f"{name} is an absolute path: name a file relative to the directory")
    parts = [part for part in name.split("/") if part and part != "."]
    if ".." in parts:
        raise Outside(f"{name} leaves the directory (..)")
    if not parts:
        raise Outside(f"{name} names the directory itself, not a file in it")
    return parts


def open_beneath(dirfd: int, name: str, flags: int = os.O_RDONLY) -> int:
    """``name`` opened beneath the directory ``dirfd``, in a way no rename or symlink swapped
    in between can lead out of it. Raises :class:`Outside` for a name that leaves it as
    written, :class:`OSError` for one the kernel refuses (``EXDEV``/``ELOOP``: a symlink
    out; a symlink at all, where there is no openat2)."""
    parts = parts_of(name)
    fd = openat2(dirfd, "/".join(parts), flags)
    if fd is not None:
        return fd
    parent = dirfd
    try:
        for part in parts[:-1]:
            following = os.open(part, _DIR_FLAGS, dir_fd=parent)
            if parent != dirfd:
                os.close(parent)
            parent = following
        return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    finally:
        if parent != dirfd:
            os.close(parent)
