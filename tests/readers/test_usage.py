"""Tokens and cost at a glance: what the agent reported (``usage_update``, the unstable
``Usage`` of a v1 prompt response or a v2 idle ``state_update``) in ``stats``, ``ls`` and
the report's header."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from acp_proxy.core.framing import parse_frame
from acp_proxy.transcript.records import end_record, frame_record, start_record
from tests.conftest import RECORDINGS, invoke

T = "2026-11-29T20:17:00.000000Z"
INFO = {"name": "test", "version": "1"}


def session(path: Path, version: int, frames: list[tuple[str, dict[str, Any]]]) -> Path:
    opening = [
        ("client", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": version}}),
        ("agent", {"jsonrpc": "2.0", "id": 0,
                   "result": {"protocolVersion": version, "agentInfo": INFO}}),
    ]  # fmt: skip
    with open(path, "wb") as out:
        out.write(start_record(T, ["agent"], 1))
        for seq, (side, message) in enumerate([*opening, *frames], 1):
            out.write(frame_record(seq, T, side, parse_frame(orjson.dumps(message))))
        out.write(end_record(T, 0, "client closed stdin"))
    return path


def prompt(number: int) -> tuple[str, dict[str, Any]]:
    return ("client", {"jsonrpc": "2.0", "id": number, "method": "session/prompt",
                       "params": {"sessionId": "s1", "prompt": []}})  # fmt: skip


def v1_answer(number: int, usage: dict[str, int]) -> tuple[str, dict[str, Any]]:
    result = {"stopReason": "end_turn", "usage": usage}
    return ("agent", {"jsonrpc": "2.0", "id": number, "result": result})


def idle(usage: dict[str, int]) -> tuple[str, dict[str, Any]]:
    update = {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn",
              "usage": usage}  # fmt: skip
    return ("agent", {"jsonrpc": "2.0", "method": "session/update",
                      "params": {"sessionId": "s1", "update": update}})  # fmt: skip


def test_stats_says_the_cost_and_context_window_the_agent_reported() -> None:
    clean = invoke("stats", str(RECORDINGS / "clean.jsonl"))
    assert "usage: cost 0.002 USD, context 2,400/200,000" in clean.stdout.decode()
    figures = orjson.loads(
        invoke("stats", "--format", "json", str(RECORDINGS / "clean.jsonl")).stdout
    )
    assert figures["usage"] == {"cost": {"USD": 0.002}, "context": {"used": 2400, "size": 200000}}
    none = invoke("stats", str(RECORDINGS / "v1.jsonl")).stdout.decode()
    assert "usage: not reported by the agent" in none


def test_v1_usage_is_the_sessions_so_far_and_v2_usage_each_turns(tmp_path: Path) -> None:
    """v1's Usage is cumulative for the session (the last says it all); v2's is the work just
    completed (added up)."""
    first, second = (
        {"inputTokens": 100, "outputTokens": 20},
        {"inputTokens": 250, "outputTokens": 50},
    )
    v1 = session(
        tmp_path / "v1.jsonl", 1, [prompt(1), v1_answer(1, first), prompt(2), v1_answer(2, second)]
    )
    said = orjson.loads(invoke("stats", "--format", "json", str(v1)).stdout)["usage"]
    assert said == {"tokens": {"inputTokens": 250, "outputTokens": 50}}
    v2 = session(tmp_path / "v2.jsonl", 2, [prompt(1), idle(first), prompt(2), idle(second)])
    said = orjson.loads(invoke("stats", "--format", "json", str(v2)).stdout)["usage"]
    assert said == {"tokens": {"inputTokens": 350, "outputTokens": 70}}
    assert "usage: 350 in + 70 out tokens" in invoke("stats", str(v2)).stdout.decode()


def test_ls_has_a_usage_column(tmp_path: Path) -> None:
    where = tmp_path / "recs"
    where.mkdir()
    (where / "clean.jsonl").write_bytes((RECORDINGS / "clean.jsonl").read_bytes())
    tokens = [prompt(1), idle({"inputTokens": 1200, "outputTokens": 34})]
    session(where / "tokens.jsonl", 2, tokens)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    rows = {
        Path(row["path"]).name: row
        for row in map(
            orjson.loads, invoke("ls", "--format", "json", str(where), env=env).stdout.splitlines()
        )
    }
    assert rows["clean.jsonl"]["cost"] == "0.002 USD" and rows["clean.jsonl"]["tokens"] is None
    assert rows["tokens.jsonl"]["tokens"] == 1234 and rows["tokens.jsonl"]["cost"] is None
    for _ in range(2):  # read, then from the index
        text = invoke("ls", str(where), env=env).stdout.decode().splitlines()
        assert "USAGE" in text[0]
        assert any("0.002 USD" in line and "clean.jsonl" in line for line in text)
        assert any("1,234 tokens" in line and "tokens.jsonl" in line for line in text)


def test_the_reports_header_says_the_usage(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    assert invoke("report", str(RECORDINGS / "clean.jsonl"), "-o", str(page)).returncode == 0
    html = page.read_text()
    assert '"usage":"cost 0.002 USD, context 2,400/200,000"' in html
    assert 'add("usage"' in html


def test_stats_over_several_recordings_adds_their_costs(tmp_path: Path) -> None:
    """Two recordings whose sessions share an id (each agent's first, sess_0001) are two
    sessions: their costs add up."""
    clean = str(RECORDINGS / "clean.jsonl")
    figures = orjson.loads(invoke("stats", "--format", "json", clean, clean).stdout)
    assert figures["usage"]["cost"] == {"USD": 0.004}
