"""``chat --continue``, as ``claude --continue``: the last session of this agent command in
this directory, found in the recordings, loaded or resumed."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest

from acp_proxy.drive.chat.last import last_session
from tests.conftest import invoke


@pytest.mark.parametrize("version", ["1", "2"])
def test_continue_goes_on_with_the_last_session_of_this_agent_here(version, tmp_path):
    kept, here, elsewhere = tmp_path / "kept", tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    agent = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", "0",
             "--sessions", str(kept)]  # fmt: skip

    def chat(where: Path, *options: str) -> tuple[int, list[dict[str, object]], str]:
        proc = invoke("chat", "--format", "json", "--protocol", version, "--cwd", str(where),
                      *options, "--", *agent)  # fmt: skip
        lines = [orjson.loads(line) for line in proc.stdout.splitlines()]
        return proc.returncode, lines, proc.stderr.decode()

    status, _, said = chat(here, "-c", "-p", "hi")
    assert status == 1 and "--continue: no recorded session of" in said, said
    _, first, _ = chat(here, "-p", "first")
    _, other, _ = chat(elsewhere, "-p", "elsewhere")  # newer, but in another directory
    status, again, said = chat(here, "--continue", "-p", "second")
    assert status == 0, said
    assert again[0]["session"] == first[0]["session"] != other[0]["session"]
    assert f"--continue: session {first[0]['session']}" in said
    history = [e["text"] for e in again if e.get("history") and e["type"] == "user"]
    assert history == (["first"] if version == "1" else [])
    both = invoke("chat", "-c", "--session", "x", "-p", "a", "--", *agent)
    assert both.returncode == 2 and b"--continue and --session contradict" in both.stderr


def test_the_last_session_skips_what_is_not_a_recording_of_this_command(tmp_path):
    start = {"kind": "start", "argv": ["agent"]}
    new = {"kind": "frame", "msg": {"jsonrpc": "2.0", "id": 1, "method": "session/new",
                                    "params": {"cwd": "/w", "mcpServers": []}}}  # fmt: skip
    answer = {"kind": "frame", "msg": {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s1"}}}
    odd = {"kind": "frame", "msg": {"jsonrpc": "2.0", "id": [1], "result": {"sessionId": "x"}}}
    lines = [start, new, odd, answer]
    (tmp_path / "1.jsonl").write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in lines))
    (tmp_path / "2.jsonl").write_bytes(orjson.dumps({"kind": "start", "argv": ["other"]}) + b"\n")
    (tmp_path / "3.jsonl").write_bytes(b"not json\n")
    assert last_session(tmp_path, ["agent"], Path("/w")) == "s1"
    assert last_session(tmp_path, ["agent"], Path("/elsewhere")) is None
    assert last_session(tmp_path / "none", ["agent"], Path("/w")) is None
