"""Where recordings go, and the recorder that writes them.

The recorder never takes the relay down: if the file cannot be opened or
written (missing directory, permission denied, disk full), it logs one clear
error and stops recording; the session goes on.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .transcript import end_record, format_time, start_record

__all__ = ["Recorder", "default_record_dir", "resolve_record_path"]


def default_record_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$ACP_PROXY_RECORD_DIR``, else ``$XDG_STATE_HOME/acp-proxy/recordings``,
    else ``~/.local/state/acp-proxy/recordings``."""
    env = os.environ if env is None else env
    if env.get("ACP_PROXY_RECORD_DIR"):
        return Path(env["ACP_PROXY_RECORD_DIR"]).expanduser()
    if env.get("XDG_STATE_HOME"):
        return Path(env["XDG_STATE_HOME"]).expanduser() / "acp-proxy" / "recordings"
    return Path.home() / ".local" / "state" / "acp-proxy" / "recordings"


def recording_name(pid: int | None, when: datetime | None = None) -> str:
    """``<UTC time>-<agent pid>.jsonl``: names sort by start time."""
    when = when or datetime.now(UTC)
    return f"{when.astimezone(UTC).strftime('%Y%m%dT%H%M%S.%fZ')}-{pid}.jsonl"


def resolve_record_path(
    option: str | None, pid: int | None, env: Mapping[str, str] | None = None
) -> Path:
    """The file a session records to.

    An existing directory, or a path ending in ``/``, gets a new file per
    session; any other path is a file that sessions append to.
    """
    if option is None:
        return default_record_dir(env) / recording_name(pid)
    path = Path(option).expanduser()
    if option.endswith(("/", os.sep)) or path.is_dir():
        return path / recording_name(pid)
    return path


class Recorder:
    """Appends transcript records to one file, flushing on demand.

    Records accumulate in memory while a chunk is observed and reach the file
    in one write at :meth:`flush`, which the relay calls before it waits for
    more input: a crash loses nothing that was relayed.
    """

    def __init__(self, path: Path | None, log: Any) -> None:
        #: Where the transcript goes; None when recording is off.
        self.path = path
        self._log = log
        self._fd: int | None = None
        self._pending: list[bytes] = []
        self._failed = False

    @property
    def active(self) -> bool:
        """Whether records are being written."""
        return self._fd is not None

    def open(self, argv: list[str], pid: int | None) -> None:
        """Open (or create, mode 0600) the file and write the ``start`` record."""
        if self.path is None:
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._fd = os.open(
                self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600
            )
        except OSError as exc:
            self._fail("cannot open recording", exc)
            return
        self._log.info("recording", path=str(self.path))
        self.write(start_record(format_time(), argv, pid))
        self.flush()

    def write(self, record: bytes) -> None:
        """Queue one record line for the next :meth:`flush`."""
        if self._fd is not None:
            self._pending.append(record)

    def flush(self) -> None:
        """Write the queued records; on failure log once and stop recording."""
        if self._fd is None or not self._pending:
            return
        data = memoryview(b"".join(self._pending))
        self._pending.clear()
        try:
            while data:
                written = os.write(self._fd, data)
                data = data[written:]
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
