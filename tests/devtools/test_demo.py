"""The example agent and `acp-proxy demo`: a newcomer's first session."""

from __future__ import annotations

import subprocess

import orjson

from tests.conftest import PROXY, clean_env, invoke


def test_demo_drives_a_whole_session_through_the_proxy(tmp_path):
    """`acp-proxy demo` runs the example agent behind the proxy and records the session."""
    record = tmp_path / "demo.jsonl"
    proc = subprocess.run(
        [*PROXY, "demo", "--record", str(record), "--delay", "0.05"],
        capture_output=True,
        env=clean_env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    assert str(record) in out
    assert "turn ended: end_turn" in out
    assert "turn ended: cancelled" in out
    # it ends by showing the conversation as the editor would, and how to read the transcript
    conversation = out[out.index("What the editor would show") :]
    assert "── Turn 1" in conversation and "── Turn 2" in conversation
    assert "ended: end_turn" in conversation and "ended: cancelled" in conversation
    assert "user: Summarize the project README." in conversation
    assert f"acp-proxy show {record}" in out  # (the full path when PATH has no acp-proxy)
    records = [orjson.loads(line) for line in record.read_bytes().split(b"\n")[:-1]]
    assert records[0]["kind"] == "start" and records[-1]["kind"] == "end"
    assert records[-1]["exit"] == 0
    msgs = [r["msg"] for r in records if r["kind"] == "frame"]
    methods = [m.get("method") for m in msgs]
    assert methods.count("session/prompt") == 2
    assert "session/cancel" in methods and "session/request_permission" in methods
    updates = [m["params"]["update"] for m in msgs if m.get("method") == "session/update"]
    kinds = {u["sessionUpdate"] for u in updates}
    assert {
        "user_message",
        "state_update",
        "agent_message_chunk",
        "tool_call_update",
        "plan_update",
        "usage_update",
        "agent_thought_chunk",
    } <= kinds
    assert "notice" not in kinds  # sent by the agent, relayed, never stored
    prompt_results = [
        m["result"]
        for m in msgs
        if isinstance(m.get("result"), dict) and "messageId" in m["result"]
    ]
    assert len(prompt_results) == 2
    stops = [u.get("stopReason") for u in updates if u.get("state") == "idle"]
    assert stops == ["end_turn", "cancelled"]


def test_example_agent_speaks_v1_when_asked():
    """Asked for protocol version 1, the example agent answers a prompt with {stopReason}."""
    requests = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/new",
            "params": {"cwd": "/", "mcpServers": []},
        },
    ]
    import sys

    with subprocess.Popen(
        [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", "0"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    ) as agent:
        assert agent.stdin is not None and agent.stdout is not None
        for request in requests:
            agent.stdin.write(orjson.dumps(request) + b"\n")
        agent.stdin.flush()
        assert orjson.loads(agent.stdout.readline())["result"]["protocolVersion"] == 1
        session = orjson.loads(agent.stdout.readline())["result"]["sessionId"]
        prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}
        agent.stdin.write(
            orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": prompt})
            + b"\n"
        )
        agent.stdin.flush()
        while True:
            message = orjson.loads(agent.stdout.readline())
            if message.get("method") == "session/request_permission":
                answer = {"outcome": {"outcome": "selected", "optionId": "allow"}}
                agent.stdin.write(
                    orjson.dumps({"jsonrpc": "2.0", "id": message["id"], "result": answer}) + b"\n"
                )
                agent.stdin.flush()
            if message.get("id") == 2:
                assert message["result"] == {"stopReason": "end_turn"}
                break
        agent.stdin.close()


def test_v1_tour_uses_fs_terminals_modes_and_a_cancel_and_validates_clean(tmp_path):
    """The v1 tour (an editor that advertises fs and terminals): a mode switch, a file read,
    a terminal created, read and released, and a second prompt cancelled mid-stream. Every v1
    rule holds: `validate` finds nothing, and the conversation and stats read it."""
    record = tmp_path / "v1-tour.jsonl"
    proc = subprocess.run(
        [*PROXY, "demo", "--scenario", "v1-tour", "--record", str(record), "--delay", "0.02"],
        capture_output=True,
        env=clean_env(),
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    records = [orjson.loads(line) for line in record.read_bytes().split(b"\n")[:-1]]
    msgs = [r["msg"] for r in records if r["kind"] == "frame"]
    assert all(not r.get("violations") for r in records)
    methods = [m.get("method") for m in msgs]
    for method in (
        "session/set_mode",
        "fs/read_text_file",
        "terminal/create",
        "terminal/output",
        "terminal/release",
        "session/cancel",
    ):
        assert method in methods, method
    stops = [m["result"]["stopReason"] for m in msgs if "stopReason" in m.get("result", {})]
    assert stops == ["end_turn", "cancelled"]
    validate = invoke("validate", str(record))
    assert (validate.returncode, validate.stdout) == (0, b"")
    stats = orjson.loads(invoke("stats", "--format", "json", str(record)).stdout)
    assert [t["stop_reason"] for t in stats["turns"]] == ["end_turn", "cancelled"]
    shown = invoke("show", "--conversation", "--no-color", str(record)).stdout.decode()
    assert "ended: cancelled" in shown and "'ls' (execute): completed" in shown
