"""Where recordings go, and the recorder that writes them.

The recorder never takes the relay down: if the file cannot be opened or
written (missing directory, permission denied, disk full), it logs one clear
error and stops recording; the session goes on.

Recordings hold prompts, file contents and credentials, so they land only
where, and as, the user meant:

- a new per-session file is created exclusively, never through a symlink
  (``O_CREAT | O_EXCL | O_NOFOLLOW``, mode 0600); if the name is taken, the
  next free ``NAME-1.jsonl``, ``NAME-2.jsonl``... is used;
- an explicit ``--record FILE`` is never opened through a symlink, and is
  appended to only if it is a regular file owned by the user that neither group
  nor others can read; otherwise the session goes to a new file in the default
  recordings directory, and the log says why and where;
- a session owns its file while it writes (an advisory ``flock``): a second
  session appending to the same file at the same time records to a sibling
  ``NAME-<pid>.jsonl`` instead, and the log says where;
- a recordings directory that others can write to, without the sticky bit,
  gets a warning.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from acp_proxy.core.schema import schema_sources
from acp_proxy.core.times import format_time
from acp_proxy.log import Logger
from acp_proxy.transcript.names import (
    default_record_dir,
    is_per_session,
    recording_name,
    resolve_record_path,
)
from acp_proxy.transcript.records import end_record, start_record

if TYPE_CHECKING:
    from acp_proxy.live.spool import LineSpool

__all__ = [
    "Recorder",
    "default_record_dir",
    "is_per_session",
    "recording_name",
    "resolve_record_path",
    "session_recorder",
]

_CREATE_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_APPEND | os.O_CLOEXEC
#: O_NONBLOCK: opening a FIFO planted at the path must not wait for a reader
#: (it is refused as not a regular file; on a regular file the flag does nothing).
_APPEND = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_APPEND | os.O_CLOEXEC | os.O_NONBLOCK
#: How many alternative names are tried when a per-session name is taken.
_ATTEMPTS = 100


def session_recorder(
    option: str | None,
    log: Logger,
    argv: Sequence[str],
    pid: int | None,
    started: str | None = None,
) -> Recorder:
    """The recorder ``run --record OPTION`` asks for (None: the default directory). Never
    raises: a path that cannot even be worked out (``~nobody/x.jsonl``) is said once in the
    log, and the session goes on unrecorded, as when the file cannot be opened."""
    try:
        path, append = resolve_record_path(option, pid), not is_per_session(option)
    except (OSError, RuntimeError, ValueError) as exc:
        log.error("cannot record this session; relaying without a recording", record=option,
                  error=str(exc))  # fmt: skip
        return Recorder(None, log)
    return Recorder(path, log, argv, pid, append=append, started=started)


class _Refused(Exception):
    """An explicit recording file the proxy will not append to, and why."""


def _alternatives(path: Path) -> list[Path]:
    return [path] + [path.with_name(f"{path.stem}-{n}{path.suffix}") for n in range(1, _ATTEMPTS)]


class Recorder:
    """Appends transcript records to one file, flushing on demand.

    Records accumulate in memory while a chunk is observed and reach the file
    in one write at :meth:`flush`, which the relay calls before it waits for
    more input: a crash loses nothing that was relayed.
    """

    def __init__(
        self,
        path: Path | None,
        log: Logger,
        argv: Sequence[str] = (),
        pid: int | None = None,
        *,
        append: bool = False,
        started: str | None = None,
    ) -> None:
        """A recorder of the session of agent ``argv`` (process ``pid``) to ``path``, opened
        (see the module's docstring) and its ``start`` record written; ``path`` None: a
        recorder that records nothing. ``append``: ``path`` is an explicit file that
        sessions append to, not a new file. ``started``: when the session started, if
        before now (``run``'s first frames may be read before the recorder is made)."""
        #: Where the transcript goes (where it went, when the path asked for was taken);
        #: None when recording is off.
        self.path = path
        self.append = append
        #: The agent's command line and process, as the ``start`` record says.
        self.argv, self.pid = list(argv), pid
        self._log = log
        self._fd: int | None = None
        self._pending: list[bytes] = []
        self._failed = False
        self._open(self.argv, pid, started)

    @property
    def active(self) -> bool:
        """Whether records are being written."""
        return self._fd is not None

    def _open(self, argv: list[str], pid: int | None, started: str | None) -> None:
        """Open the file safely (see the module's docstring) and write the ``start`` record."""
        if self.path is None:
            return
        try:
            self._fd = self._open_safely(self.path, pid)
        except OSError as exc:
            self._fail("cannot open recording", exc)
            return
        self._log.info("recording", path=str(self.path))
        t = started or format_time()
        self.write(start_record(t, argv, pid, schema_sources().as_dict()))
        self.flush()

    def _open_safely(self, path: Path, pid: int | None) -> int:
        if not self.append:
            return self._create_new(path)
        try:
            fd = self._open_to_append(path)
        except _Refused as why:
            fallback = default_record_dir() / recording_name(pid)
            self._log.warning(
                f"not appending to {path}: {why}; recording this session to a new file instead",
                path=str(fallback),
            )
            return self._create_new(fallback)
        if _lock(fd):
            return fd
        os.close(fd)
        sibling = path.with_name(f"{path.stem}-{pid}{path.suffix or '.jsonl'}")
        self._log.warning(
            f"{path} is being recorded to by another session; recording this one beside it",
            path=str(sibling),
        )
        return self._create_new(sibling)

    def _create_new(self, path: Path) -> int:
        """A new file, created exclusively and never through a symlink; another name if taken."""
        self._make_directory(path.parent)
        for candidate in _alternatives(path):
            try:
                fd = os.open(candidate, _CREATE_NEW, 0o600)
            except FileExistsError:
                continue
            except OSError as exc:
                if exc.errno == errno.ELOOP:  # a symlink sits at that name
                    continue
                raise
            _lock(fd)
            self.path = candidate
            return fd
        raise FileExistsError(errno.EEXIST, f"{_ATTEMPTS} names taken", str(path))

    def _open_to_append(self, path: Path) -> int:
        self._make_directory(path.parent)
        try:
            fd = os.open(path, _APPEND, 0o600)
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise _Refused("it is a symbolic link") from None
            if exc.errno == errno.ENXIO:  # a FIFO nobody reads
                raise _Refused("it is not a regular file") from None
            raise
        info = os.fstat(fd)
        problem = None
        if not stat.S_ISREG(info.st_mode):
            problem = "it is not a regular file"
        elif info.st_uid != os.geteuid():
            problem = "it belongs to another user"
        elif info.st_mode & 0o077:
            problem = f"others can read it (mode {stat.S_IMODE(info.st_mode):04o})"
        if problem is not None:
            os.close(fd)
            raise _Refused(problem)
        return fd

    def _make_directory(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        with contextlib.suppress(OSError):
            mode = directory.stat().st_mode
            if mode & stat.S_IWOTH and not mode & stat.S_ISVTX:
                self._log.warning(
                    "the recordings directory is writable by others and not sticky: "
                    "they can plant or replace files in it",
                    directory=str(directory),
                )

    def write(self, *pieces: bytes) -> None:
        """Queue one record line (in one piece or several) for the next :meth:`flush`."""
        if self._fd is not None:
            self._pending.extend(pieces)

    def flush(self) -> None:
        """Write the queued records (gathered, never joined: a big frame is not copied);
        on failure log once and stop recording."""
        if self._fd is None or not self._pending:
            return
        pending: list[bytes | memoryview] = list(self._pending)
        self._pending.clear()
        try:
            while pending:
                written = os.writev(self._fd, pending[:_IOV_MAX])
                done = 0
                while done < len(pending) and written >= len(pending[done]):
                    written -= len(pending[done])
                    done += 1
                del pending[:done]
                if written:
                    pending[0] = memoryview(pending[0])[written:]
        except OSError as exc:
            self._fail("cannot write recording", exc)

    def write_spooled(self, spool: LineSpool) -> None:
        """Write the base64 of a spooled line (the body of its record, between what
        :meth:`write` queued before and after it), a block at a time, never held whole;
        on failure log once and stop recording."""
        self.flush()
        if self._fd is None:
            return
        try:
            spool.copy_base64(self._fd)
        except OSError as exc:
            self._fail("cannot write recording", exc)

    def close(self, exit_status: int | None, reason: str) -> None:
        """Write the ``end`` record and close the file."""
        if self._fd is None:
            return
        self.write(end_record(format_time(), exit_status, reason))
        self.flush()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _fail(self, what: str, exc: OSError) -> None:
        if not self._failed:
            self._failed = True
            self._log.error(
                f"{what}; the session goes on without it",
                path=str(self.path),
                error=exc.strerror or str(exc),
            )
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None
        self._pending.clear()


#: Buffers per writev call (the usual IOV_MAX).
_IOV_MAX = 1024


#: How long the recorder tries for its file's lock before it takes it for another session's:
#: ``ls`` and pruning look at the lock (they take it for a moment) to know a file is being
#: written, and a session that started in that moment must not take their look for a session.
_LOCK_PATIENCE = 0.05


def _lock(fd: int) -> bool:
    """Take the file's advisory lock; False if another session holds it."""
    deadline = time.monotonic() + _LOCK_PATIENCE
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.002)
        except OSError:
            return True  # a filesystem without locks: nothing to coordinate with
        else:
            return True
