"""Files for the agent, beneath a sandbox directory, with no check that can be raced.

The client core answers the agent's ``fs/read_text_file`` and ``fs/write_text_file``
inside one directory (:class:`Sandbox`). A path is never checked as a string and then
opened: the sandbox is held open as a directory descriptor, and every path is resolved
beneath it by the kernel, in the same system call that opens it:

- where the kernel has ``openat2`` (Linux 5.6+), with ``RESOLVE_BENEATH`` (no ``..``
  above the root, no absolute symlink, no symlink that leads out) and
  ``RESOLVE_NO_MAGICLINKS`` (no ``/proc/self/fd/N``);
- elsewhere one component at a time from the root's descriptor, each directory opened
  with ``O_NOFOLLOW | O_DIRECTORY`` (a symlink anywhere in the path is refused).

An agent that swaps a directory for a symlink between two requests, or during one, gets
an error, never a file outside. A write never writes into an existing file: the content
goes to a new file in the target's directory, renamed over the target, so a hard link
planted in the sandbox (another name of a file outside) keeps the outside file as it was.
Reads are bounded (:data:`READ_LIMIT`). Named pipes, devices and directories are no text
files: refused, without waiting on a pipe's writer.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections.abc import Iterator

from acp_proxy.transcript import beneath

__all__ = ["READ_LIMIT", "Outside", "Sandbox", "SandboxError"]

#: The biggest file read for the agent.
READ_LIMIT = 8 * 1024 * 1024

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC | os.O_NOFOLLOW


class SandboxError(Exception):
    """A file request the sandbox refuses or the system fails: in words for the agent."""


class Outside(SandboxError):
    """The path names something outside the sandbox."""


class Sandbox:
    """The directory the agent's files live in, held open (:meth:`close` lets it go)."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = os.path.realpath(root)
        #: The names the agent may use for the root: as given (absolute) and as resolved.
        self._names = {os.path.abspath(root), self.root}
        self.fd = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)

    # --- paths ---------------------------------------------------------------------------

    def relative(self, path: str) -> list[str]:
        """``path``'s components below the root (``[]``: the root itself). Raises
        :class:`Outside` for a path not under the root, said lexically: ``..`` is taken
        as written, then the kernel resolves what is left beneath the root's descriptor."""
        if not os.path.isabs(path) or "\x00" in path:
            raise SandboxError("path must be an absolute path")
        normal = os.path.normpath(path)
        for name in self._names:
            if normal == name:
                return []
            prefix = name.rstrip(os.sep) + os.sep
            if normal.startswith(prefix):
                return [part for part in normal[len(prefix) :].split(os.sep) if part]
        raise Outside(f"{path} is outside the client's sandbox")

    def _open(self, parts: list[str], flags: int, mode: int = 0) -> int:
        """``parts`` opened beneath the root, in one call that cannot be raced."""
        if not parts:
            return os.open(".", flags | os.O_CLOEXEC, mode, dir_fd=self.fd)
        fd = beneath.openat2(self.fd, os.path.join(*parts), flags, mode)
        if fd is not None:
            return fd
        parent = self._walk(parts[:-1])
        try:
            return os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode, dir_fd=parent)
        finally:
            if parent != self.fd:
                os.close(parent)

    def _walk(self, parts: list[str]) -> int:
        """The directory ``parts`` names, opened one component at a time, no symlink
        followed (the fallback where there is no openat2)."""
        fd = self.fd
        for part in parts:
            try:
                following = os.open(part, _DIR_FLAGS, dir_fd=fd)
            except NotADirectoryError:  # (said as a symlink when it is one: words only)
                if _is_link(part, fd):
                    raise OSError(errno.ELOOP, "symbolic link", part) from None
                raise
            finally:
                if fd != self.fd:
                    os.close(fd)
            fd = following
        return fd

    def directory(self, path: str) -> int:
        """A descriptor of the directory ``path`` names, beneath the root (the caller
        closes it)."""
        try:
            return self._open(self.relative(path), os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise _refusal(exc, path) from None

    # --- files ---------------------------------------------------------------------------

    def read(self, path: str, limit: int = READ_LIMIT) -> bytes:
        """The bytes of the regular file ``path`` names, at most ``limit`` of them (more is
        an error)."""
        parts = self.relative(path)
        try:
            # (not waiting on a named pipe's writer; a pipe or a device is no text file)
            fd = self._open(parts, os.O_RDONLY | os.O_NONBLOCK)
        except OSError as exc:
            raise _refusal(exc, path) from None
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise SandboxError(f"{path} is not a regular file")
            os.set_blocking(fd, True)
            data = bytearray()
            while len(data) <= limit:
                piece = os.read(fd, min(1 << 20, limit + 1 - len(data)))
                if not piece:
                    break
                data += piece
        except OSError as exc:
            raise SandboxError(f"cannot read {path}: {exc.strerror}") from None
        finally:
            os.close(fd)
        if len(data) > limit:
            raise SandboxError(f"{path} is larger than {limit} bytes")
        return bytes(data)

    def write(self, path: str, data: bytes) -> None:
        """``path``'s content replaced by ``data``: written to a new file beside it and
        renamed over it (a hard link's other names keep the old content; a reader never
        sees half a file). A directory, a symlink, a pipe or a device at ``path`` is
        refused; a regular file keeps its permission bits."""
        parts = self.relative(path)
        if not parts:
            raise SandboxError(f"{path} is a directory")
        name = parts[-1]
        try:
            parent = self._open(parts[:-1], os.O_RDONLY | os.O_DIRECTORY)
        except OSError as exc:
            raise _refusal(exc, path) from None
        try:
            self._replace(parent, name, path, data)
        finally:
            os.close(parent)

    def _replace(self, parent: int, name: str, path: str, data: bytes) -> None:
        try:
            info: os.stat_result | None = os.stat(name, dir_fd=parent, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        except OSError as exc:
            raise _refusal(exc, path) from None
        if info is not None and not stat.S_ISREG(info.st_mode):
            raise SandboxError(f"{path} is not a regular file")
        temporary = _temporary_name(name)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        try:
            fd = os.open(temporary, flags, 0o600, dir_fd=parent)  # (made as a recording is)
        except OSError as exc:
            raise SandboxError(f"cannot write {path}: {exc.strerror}") from None
        try:
            with _closing(fd):
                if info is not None:
                    os.fchmod(fd, stat.S_IMODE(info.st_mode))
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            os.rename(temporary, name, src_dir_fd=parent, dst_dir_fd=parent)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=parent)
            raise SandboxError(f"cannot write {path}: {exc.strerror}") from None


#: The longest file name, in bytes, the file systems take (Linux's and macOS's NAME_MAX).
NAME_MAX = 255


def _temporary_name(name: str) -> str:
    """The name a new content is written under before it is renamed over ``name``:
    ``.NAME.acp-proxy-RANDOM``, ``NAME`` cut to fit NAME_MAX in bytes (a 237-byte UTF-8
    name is a valid one, though it is fewer than 200 characters), at a character's end."""
    suffix = f".acp-proxy-{secrets.token_hex(6)}".encode()
    room = NAME_MAX - 1 - len(suffix)
    raw = os.fsencode(name)
    if len(raw) > room:
        raw = raw[:room]
        while raw and raw[-1] & 0xC0 == 0x80:  # (a character cut: its lead byte goes too)
            raw = raw[:-1]
        if raw and raw[-1] >= 0xC0:
            raw = raw[:-1]
    return os.fsdecode(b"." + raw + suffix)


def _is_link(name: str, dir_fd: int) -> bool:
    try:
        return stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode)
    except OSError:
        return False


@contextlib.contextmanager
def _closing(fd: int) -> Iterator[int]:
    try:
        yield fd
    finally:
        os.close(fd)


def _refusal(exc: OSError, path: str) -> SandboxError:
    """An error opening ``path`` beneath the root, in words: leaving the sandbox (through
    a symlink or ``..``) is :class:`Outside`."""
    if exc.errno == errno.EXDEV:
        return Outside(f"{path} leads outside the client's sandbox")
    if exc.errno == errno.ELOOP:
        return Outside(f"{path} goes through a symbolic link (not followed in the sandbox)")
    if exc.errno == errno.ENOTDIR:
        return SandboxError(f"{path}: a part of it is not a directory")
    if exc.errno == errno.ENOENT:
        return SandboxError(f"{path}: no such file or directory")
    if exc.errno == errno.ENXIO:
        return SandboxError(f"{path} is not a regular file")
    return SandboxError(f"cannot open {path}: {exc.strerror}")
