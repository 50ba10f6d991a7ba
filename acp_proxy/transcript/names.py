"""Where recordings go, and what the proxy names them: the default recordings directory and
the per-session file name (``<UTC time>-<agent pid>.jsonl``, sorting by start time), which
tells a file the proxy made from one it did not (pruning removes only those)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

__all__ = [
    "PROXY_NAME",
    "default_record_dir",
    "is_per_session",
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
