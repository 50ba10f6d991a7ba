"""The readers over what the wire model and the validator say (those alone are tests/core's):
what stats makes of a rejected prompt, a closed turn, long session ids; where the annotator
says a connection begins; how show, the conversation and stats name a proxy chain's next
hop; how show prints an error response's data."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import orjson
import pytest

from acp_proxy.core.framing import parse_frame
from acp_proxy.readers.annotate import annotate
from acp_proxy.readers.stats import Stats
from acp_proxy.transcript.reading import iter_records
from acp_proxy.transcript.records import end_record, frame_record, start_record
from tests.conftest import acp
from tests.exchanges import A, C, Frames, next_hop, proxy_setup, setup
from tests.exchanges import S as SESSION
from tests.exchanges import req as request

S = "s1"


def req(id_: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def ok(id_: Any, **result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def err(id_: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": -32603, "message": "no"}}


def update(**fields: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": S, "update": fields},
    }


def _recording(frames: list[tuple[str, str, Any]]) -> bytes:
    out = start_record("2026-01-01T00:00:00.000000Z", ["agent"], 1)
    for seq, (t, side, message) in enumerate(frames, 1):
        frame = parse_frame(orjson.dumps(message))
        out += frame_record(seq, f"2026-01-01T00:00:{t}Z", side, frame)
    return out


def _stats_of(path: Path, frames: list[tuple[str, str, Any]]) -> Stats:
    """stats over a recording of these frames, read back from a file."""
    path.write_bytes(_recording(frames))
    stats = Stats()
    with open(path, "rb") as stream:
        for item in annotate(iter_records(stream)):
            stats.add(item)
    return stats


def test_stats_does_not_fold_a_rejected_prompt_into_the_next_turn(tmp_path: Path) -> None:
    """The bug: a prompt rejected at 0 s, then a 1 s turn at 10 s, was one 11 s turn."""
    idle = update(sessionUpdate="state_update", state="idle", stopReason="end_turn")
    frames = [
        ("00.000000", "client", req(0, "initialize", protocolVersion=2)),
        ("00.100000", "agent", ok(0, protocolVersion=2)),
        ("00.200000", "client", req(1, "session/prompt", sessionId=S, prompt=[])),
        ("00.300000", "agent", err(1)),
        ("10.000000", "client", req(2, "session/prompt", sessionId=S, prompt=[])),
        ("10.100000", "agent", update(sessionUpdate="state_update", state="running")),
        ("10.200000", "agent", ok(2, messageId="m")),
        ("11.000000", "agent", idle),
    ]
    stats = _stats_of(tmp_path / "r.jsonl", frames)
    turns = stats.as_json()["turns"]
    assert len(turns) == 1
    assert turns[0]["seq"] == 5 and turns[0]["duration"] == 1.0
    assert stats.latencies["session/prompt"] == pytest.approx([0.1, 0.2])


def test_stats_keeps_nothing_of_a_turn_once_it_closed(tmp_path: Path) -> None:
    """A v2 prompt rejected after a chunk but before any running state is no turn; its
    first-chunk time must not stay behind (one per rejected prompt, for the session)."""
    chunk = update(sessionUpdate="agent_message_chunk", messageId="m", content={})
    frames = [
        ("00.000000", "client", req(0, "initialize", protocolVersion=2)),
        ("00.100000", "agent", ok(0, protocolVersion=2)),
        ("00.200000", "client", req(1, "session/prompt", sessionId=S, prompt=[])),
        ("00.250000", "agent", chunk),
        ("00.300000", "agent", err(1)),
    ]
    stats = _stats_of(tmp_path / "r.jsonl", frames)
    assert stats.turns == []
    # The first-chunk time is the wire model's Turn's own: stats keeps no turn it closed.
    assert stats._open == {}


def test_stats_columns_fit_long_session_ids(tmp_path: Path) -> None:
    """Agents name sessions with UUIDs: the turns table widens to fit them."""
    long = "01a22adc-5f81-7ec3-990a-543429406596"
    idle = update(sessionUpdate="state_update", state="idle", stopReason="end_turn")
    idle["params"]["sessionId"] = long
    running = update(sessionUpdate="state_update", state="running")
    running["params"]["sessionId"] = long
    frames = [
        ("00.000000", "client", req(0, "initialize", protocolVersion=2)),
        ("00.100000", "agent", ok(0, protocolVersion=2)),
        ("00.200000", "client", req(1, "session/prompt", sessionId=long, prompt=[])),
        ("00.300000", "agent", running),
        ("00.400000", "agent", ok(1, messageId="m")),
        ("01.000000", "agent", idle),
    ]
    lines = _stats_of(tmp_path / "r.jsonl", frames).lines()
    header = next(line for line in lines if "stop reason" in line)
    row = next(line for line in lines if long in line)
    assert row.index(" 3 ") < header.index("seq") + len("seq") <= row.index(" 3 ") + 3
    assert header.index("stop reason") == row.index("end_turn")


def test_the_annotator_says_where_a_connection_begins(tmp_path: Path) -> None:
    """One test of "a new connection begins" for every reader: the start record, and the
    first frame of a connection without one; so stats counts two recordings without a
    start record as two sessions."""
    chunk = update(sessionUpdate="agent_message_chunk", messageId="m", content={})
    frame = frame_record(
        1, "2026-01-01T00:00:00.000000Z", "agent", parse_frame(orjson.dumps(chunk))
    )
    recorded = _recording([("00.000000", "agent", chunk)])
    end = end_record("2026-01-01T00:00:01.000000Z", 0, "exit")
    items = list(annotate(iter_records(io.BytesIO(frame + recorded + frame + end + frame))))
    assert [item.opens for item in items] == [True, True, False, False, False, True]
    stats = Stats()
    for _ in range(2):
        for item in annotate(iter_records(io.BytesIO(frame + frame))):
            stats.add(item)
    assert stats.sessions == 2


# --- a proxy chain and an error response, shown -------------------------------------------


def recording(path: Path, frames: Frames) -> Path:
    """A transcript of (side, message) frames, as the proxy writes one."""
    with open(path, "wb") as out:
        out.write(start_record("2026-01-01T00:00:00.000000Z", ["agent"], 1))
        for seq, (side, message) in enumerate(frames, 1):
            frame = parse_frame(orjson.dumps(message))
            out.write(frame_record(seq, f"2026-01-01T00:00:{seq:02d}.000000Z", side, frame))
        out.write(end_record("2026-01-01T00:01:00.000000Z", 0, "client closed stdin"))
    return path


def test_show_and_the_conversation_name_the_next_hops_method(tmp_path: Path) -> None:
    """show prints proxy/successor with the inner method (and its answer's); the
    conversation (text and JSON) has the next hop's session, turn and agent text; stats
    lists the proxy methods as unstable features."""
    good = {"sessionId": "inner", "prompt": [{"type": "text", "text": "hi there"}]}
    path = recording(tmp_path / "chain.jsonl", [*proxy_setup(), *next_hop(good)])
    shown = acp("show", "--no-color", str(path)).stdout.decode()
    assert "proxy/successor → session/prompt" in shown
    assert "#102 proxy/successor → session/prompt ok stopReason end_turn" in shown
    assert "proxy/successor → session/update [inner] agent_message_chunk" in shown
    text = acp("show", "--conversation", "--no-color", str(path)).stdout.decode()
    assert "Session inner (next hop 1, through proxy/successor)" in text
    document = orjson.loads(acp("show", "--conversation", "--json", str(path)).stdout)
    sessions = document["connections"][0]["sessions"]
    inner = next(s for s in sessions if s["sessionId"] == "inner")
    assert inner["hop"] == 1 and inner["turns"][0]["stopReason"] == "end_turn"
    assert inner["turns"][0]["prompt"] == good["prompt"]
    stats = orjson.loads(acp("stats", "--format", "json", str(path)).stdout)
    assert stats["unstable_features"] == ["proxy/initialize", "proxy/successor"]


def test_show_prints_an_error_responses_data(tmp_path: Path) -> None:
    """An error response's error.data is the detail people ask for: show prints it,
    shortened on one line."""
    load = {"sessionId": SESSION, "cwd": "/", "mcpServers": []}
    data = {"details": "No previous sessions found for this project."}
    failed = {"code": -32603, "message": "Internal error", "data": data}
    frames = [
        *setup(1, agent={"loadSession": True}),
        (C, request(5, "session/load", load)),
        (A, {"jsonrpc": "2.0", "id": 5, "error": failed}),
    ]
    shown = acp("show", "--no-color", str(recording(tmp_path / "e.jsonl", frames)))
    line = next(x for x in shown.stdout.decode().splitlines() if "#5 session/load error" in x)
    assert line.endswith(
        'error -32603: Internal error (data: {"details":"No previous sessions found for this project."})'
    )
    long = {"code": 1, "message": "m", "data": "x" * 500}
    frames[-1] = (A, {"jsonrpc": "2.0", "id": 5, "error": long})
    shown = acp("show", "--no-color", str(recording(tmp_path / "l.jsonl", frames)))
    line = next(x for x in shown.stdout.decode().splitlines() if "#5 session/load error" in x)
    assert len(line) < 200 and line.endswith("…)")
