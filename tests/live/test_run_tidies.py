"""``run --keep-days`` / ``--keep-size``: the default recordings directory tidied as a session
starts (``transcript.names.prune``, which ``run`` reaches without any reader)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.conftest import PROXY, clean_env


def test_run_tidies_the_default_recordings_directory_as_a_session_starts(tmp_path: Path) -> None:
    old = [tmp_path / f"20200101T000000.000000Z-{pid}.jsonl" for pid in (1, 2)]
    others = tmp_path / "mine.jsonl"  # not a name the proxy gives: never removed
    for path in [*old, others]:
        path.write_bytes(b"")
    proc = subprocess.run(
        [*PROXY, "run", "--keep-days", "1", "--", "true"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        env=clean_env(ACP_PROXY_RECORD_DIR=str(tmp_path)),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    left = sorted(path.name for path in tmp_path.iterdir())
    assert not any(path.exists() for path in old), left
    assert others.exists() and len(left) == 2, left  # (and this session's recording)
    assert proc.stderr.count("removed an old recording") == 2
