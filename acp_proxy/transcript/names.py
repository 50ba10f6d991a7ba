"""Where recordings go, and what the proxy names them: the default recordings directory and
the per-session file name (``<UTC time>-<agent pid>.jsonl``, sorting by start time), which
tells a file the proxy made from one it did not; and the directory kept tidy.

Pruning (:func:`prune`: ``run --keep-*`` as a session starts, ``ls --prune``) removes the
oldest recordings the proxy made in one directory, past an age or a total size, never a file
it did not make and never one another session is writing (the recorder's ``flock``:
:func:`being_written`)."""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from pathlib import Path

__all__ = [
    "PROXY_NAME",
    "being_written",
    "default_record_dir",
    "is_per_session",
    "prune",
    "recording_name",
    "resolve_record_path",
]

#: The name of a per-session file the proxy made (``recording_name``, or a sibling of one).
PROXY_NAME = re.compile(r"^\d{8}T\d{6}\.\d{6}Z-[A-Za-z0-9_.-]+\.jsonl$")


def default_record_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$ACP_PROXY_RECORD_DIR``, else ``$XDG_STATE_HOME/acp-proxy/recordings``,
    else ``~/.local/state/acp-proxy/recordings``."""
    env = os.environ if env is None else env
    if env.get("ACP_PROXY_RECORD_DIR"):
        return Path(env["ACP_PROXY_RECORD_DIR"]).expanduser()
    if env.get("XDG_STATE_HOME"):
        return Path(env["XDG_STATE_HOME"]).expanduser() / "acp-proxy" / "recordings"
    return Path.home() / ".local" / "state" / "acp-proxy" / "recordings"


def recording_name(pid: int | str | None, when: datetime | None = None) -> str:
    """``<UTC time>-<agent pid>.jsonl`` (or another tag than the pid): names sort by
    start time."""
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


def is_per_session(option: str | None) -> bool:
    """Whether ``--record`` asks for a new file per session (not a file to append to)."""
    if option is None:
        return True
    return option.endswith(("/", os.sep)) or Path(option).expanduser().is_dir()


def being_written(path: Path) -> bool:
    """Whether a session is recording to ``path`` now: the recorder holds the file's lock
    while it writes (see :mod:`acp_proxy.live.recorder`)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False  # a filesystem without locks: nobody to ask
    finally:
        os.close(fd)  # (closing lets a lock taken here go)
    return False


def prune(
    directory: Path,
    keep_days: float | None,
    keep_size: int | None,
    now: datetime | None = None,
    dry_run: bool = False,
) -> list[Path]:
    """Remove the oldest recordings the proxy made in ``directory``: those older than
    ``keep_days``, then the oldest until the rest fit ``keep_size`` bytes. Never a file it
    did not make, never one a session holds locked. Returns what was removed (``dry_run``:
    what would be, nothing removed)."""
    now = now or datetime.now(UTC)
    try:
        made = sorted(p for p in directory.iterdir() if PROXY_NAME.match(p.name) and p.is_file())
    except OSError:
        return []
    sizes = {}
    for path in made:
        with contextlib.suppress(OSError):
            sizes[path] = path.stat().st_size
    made = [p for p in made if p in sizes]  # names sort by start time: oldest first
    doomed: list[Path] = []
    if keep_days is not None:
        cutoff = now - timedelta(days=keep_days)
        doomed += [p for p in made if _started(p) is not None and _started(p) < cutoff]  # type: ignore[operator]
    if keep_size is not None:
        total = sum(sizes[p] for p in made if p not in doomed)
        for path in made:
            if total <= keep_size:
                break
            if path not in doomed:
                doomed.append(path)
                total -= sizes[path]
    removed = []
    for path in doomed:
        if _remove_unless_locked(path, dry_run):
            removed.append(path)
    return removed


def _started(path: Path) -> datetime | None:
    try:
        return datetime.strptime(path.name[:23], "%Y%m%dT%H%M%S.%fZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def _remove_unless_locked(path: Path, dry_run: bool = False) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False  # a session is writing it
    except OSError:
        pass
    try:
        if not dry_run:
            path.unlink()
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # (closing lets the lock go)
