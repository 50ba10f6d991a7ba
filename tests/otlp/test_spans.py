"""The span model over the recordings of ``recordings/``: a trace per session, a turn span
per ``session/prompt``, each tool call under its turn, the session id on every span, the
times within the recording, as many ``acp.violation`` events as ``validate`` finds; ids
derived from the recording (the same twice, and live with the start ``run`` knows); a turn's
spans handed over when the frame that ends it is read; content only when asked; ``--redact``
before anything leaves."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from acp_proxy.otlp.encode import STATUS_ERROR, Span, protobuf_request
from acp_proxy.otlp.spans import CONVERSATION_ID, VIOLATION, Spans, time_ns
from acp_proxy.readers.annotate import located, read
from acp_proxy.transcript.items import Annotated
from acp_proxy.transcript.records import FrameRecord, StartRecord
from acp_proxy.transcript.redact import Redactor
from tests.conftest import RECORDINGS

PATHS = sorted(RECORDINGS.glob("*.jsonl"))


def spans_of(path: Path, **options: object) -> list[Span]:
    spans: list[Span] = []
    view = Spans(spans.extend, **options)  # type: ignore[arg-type]
    view.feed(read(path))
    view.finish()
    return spans


def records(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def frames(path: Path) -> list[dict[str, Any]]:
    return [r for r in records(path) if r["kind"] == "frame" and isinstance(r.get("msg"), dict)]


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_a_recording_is_one_trace_with_a_turn_span_per_prompt(path: Path) -> None:
    """One trace (the recording holds one session), one root; a turn span per
    ``session/prompt`` the client sent, each a child of the root; a tool call span per tool
    call id, each under a turn; every span's parent in the trace."""
    spans = spans_of(path)
    assert len({s.trace_id for s in spans}) == 1
    roots = [s for s in spans if s.parent_id is None]
    assert len(roots) == 1
    (root,) = roots
    prompts = [
        f
        for f in frames(path)
        if f["from"] == "client" and f["msg"].get("method") == "session/prompt"
    ]
    turns = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "invoke_agent"]
    assert len(turns) == len(prompts) > 0
    assert all(t.parent_id == root.span_id and t.name.startswith("invoke_agent ") for t in turns)
    calls = {
        f["msg"]["params"]["update"]["toolCallId"]
        for f in frames(path)
        if str(f["msg"].get("params", {}).get("update", {}).get("sessionUpdate", "")).startswith(
            "tool_call"
        )
        and "toolCallId" in f["msg"]["params"]["update"]
    }
    tools = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "execute_tool"]
    assert {t.attributes["gen_ai.tool.call.id"] for t in tools} == calls
    assert len(tools) == len(calls)
    turn_ids = {t.span_id for t in turns}
    assert all(t.parent_id in turn_ids for t in tools)
    ids = {s.span_id for s in spans}
    assert len(ids) == len(spans)
    assert all(s.parent_id is None or s.parent_id in ids for s in spans)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_every_span_has_the_session_and_times_within_the_recording(path: Path) -> None:
    """``gen_ai.conversation.id`` is the ACP session on every span; every span and event
    lies within the recording's first and last record."""
    sessions = {
        f["msg"]["result"]["sessionId"]
        for f in frames(path)
        if isinstance(f["msg"].get("result"), dict) and "sessionId" in f["msg"]["result"]
    }
    times = [time_ns(str(r["t"])) for r in records(path)]
    first, last = min(t for t in times if t), max(t for t in times if t)
    for span in spans_of(path):
        assert span.attributes[CONVERSATION_ID] in sessions, span.name
        assert first <= span.start_ns <= span.end_ns <= last, span.name
        assert all(span.start_ns <= e.time_ns <= last for e in span.events)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_as_many_violation_events_as_validate_finds_each_on_its_frames_span(path: Path) -> None:
    """Each finding ``validate`` reports is one ``acp.violation`` event (rule, level, seq),
    on a span that covers its frame (a frame outside any turn: the root)."""
    found = sorted((f.rule, f.level, f.seq or 0) for _, f in located(read(path)))
    events = [(s, e) for s in spans_of(path) for e in s.events if e.name == VIOLATION]
    said = sorted(
        (
            str(e.attributes["acp.violation.rule"]),
            str(e.attributes["acp.violation.level"]),
            int(str(e.attributes.get("acp.violation.seq", 0))),
        )
        for _, e in events
    )
    assert said == found
    for span, event in events:
        assert span.start_ns <= event.time_ns <= max(span.end_ns, event.time_ns)


def test_a_json_rpc_error_is_the_span_status(tmp_path: Path) -> None:
    """A request answered with an error: its span's status is ERROR, with the code and the
    message; a prompt rejected: its turn's."""
    lines = (RECORDINGS / "v1-tour.jsonl").read_bytes().splitlines()
    out = []
    for line in lines:
        record = orjson.loads(line)
        message = record.get("msg")
        answer = isinstance(message, dict) and message.get("id") == 1 and "result" in message
        if answer and record["from"] == "client" and "content" in message["result"]:
            record["msg"] = {"jsonrpc": "2.0", "id": 1,
                                 "error": {"code": -32002, "message": "no such file"}}  # fmt: skip
        out.append(orjson.dumps(record))
    path = tmp_path / "error.jsonl"
    path.write_bytes(b"\n".join(out) + b"\n")
    (read_file,) = [s for s in spans_of(path) if s.name == "fs/read_text_file"][:1]
    assert read_file.status == STATUS_ERROR
    assert read_file.status_message == "-32002: no such file"
    assert read_file.attributes["rpc.jsonrpc.error_code"] == -32002


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_ids_come_from_the_recording(path: Path) -> None:
    """Exporting twice gives the same trace and span ids; so does the view fed live (the
    start record made when the first frame crossed) told the start ``run`` recorded."""
    once, twice = spans_of(path), spans_of(path)
    assert [(s.trace_id, s.span_id) for s in once] == [(s.trace_id, s.span_id) for s in twice]
    start = next(r for r in records(path) if r["kind"] == "start")
    live: list[Span] = []
    view = Spans(live.extend, started=(str(start["t"]), start["pid"]))
    for item in read(path):
        if isinstance(item, Annotated) and isinstance(item.record, StartRecord):
            made = replace(item.record, t="2099-01-01T00:00:00.000000Z")  # (made later, live)
            view.take(replace(item, record=made))
            continue
        view.take(item)
    view.finish()
    assert {(s.trace_id, s.span_id) for s in live} == {(s.trace_id, s.span_id) for s in once}


def test_a_turns_spans_are_handed_over_when_the_frame_that_ends_it_is_read() -> None:
    """Live, a turn is sent when its end is observed: the batch holding a turn's span comes
    out while the frame that closed it is read, not later."""
    path = RECORDINGS / "v1-tour.jsonl"
    batches: list[list[Span]] = []
    view = Spans(batches.append)
    at: list[int] = []
    for item in read(path, run=1):
        before = len(batches)
        view.take(item)
        if len(batches) > before:
            record = item.record if isinstance(item, Annotated) else None
            at.append(record.seq if isinstance(record, FrameRecord) else -1)
    view.finish()
    closing = [
        int(str(f["seq"]))
        for f in frames(path)
        if f["from"] == "agent"
        and isinstance(f["msg"].get("result"), dict)
        and "stopReason" in f["msg"]["result"]
    ]
    assert at[: len(closing)] == closing
    turn_batches = [b for b in batches if any(s.name.startswith("invoke_agent") for s in b)]
    assert len(turn_batches) == len(closing)


def test_what_users_typed_leaves_only_with_content() -> None:
    """Without ``content`` no span holds the prompt's or the reply's text; with it, the turn
    holds both as GenAI messages."""
    path = RECORDINGS / "clean.jsonl"
    prompt = "Summarize the project README."
    plain = orjson.dumps([s.attributes for s in spans_of(path)]).decode()
    assert prompt not in plain and "gen_ai.input.messages" not in plain
    (turn,) = [s for s in spans_of(path, content=True) if s.name.startswith("invoke_agent")]
    said = orjson.loads(str(turn.attributes["gen_ai.input.messages"]))
    assert said == [{"role": "user", "parts": [{"type": "text", "content": prompt}]}]
    reply = orjson.loads(str(turn.attributes["gen_ai.output.messages"]))
    assert reply[0]["role"] == "assistant"
    assert reply[0]["parts"][0]["content"].startswith("This is the example agent")


def test_redact_applies_before_anything_leaves(tmp_path: Path) -> None:
    """With the redactor, a secret in a terminal command, a prompt and a finding's message
    is replaced in every span and event; without it, it is there."""
    secret = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8"
    text = (RECORDINGS / "v1-tour.jsonl").read_text()
    text = text.replace('"command":"ls"', f'"command":"curl -H \'Authorization: Bearer {secret}\'"')
    text = text.replace("Summarize the project README.", f"use token {secret} please")
    path = tmp_path / "secret.jsonl"
    path.write_text(text)
    shown = orjson.dumps([(s.name, s.attributes) for s in spans_of(path, content=True)])
    assert secret.encode() in shown
    hidden = spans_of(path, content=True, redactor=Redactor())
    assert secret.encode() not in orjson.dumps(
        [(s.name, s.attributes, [e.attributes for e in s.events]) for s in hidden]
    )
    assert any("process.command" in s.attributes for s in hidden)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_a_batch_is_never_changed_once_handed_over(path: Path) -> None:
    """Live, another thread sends a batch as soon as it is handed over: what it holds then
    (a finding on the frame that ends a turn included) is what it holds at the end."""
    handed: list[tuple[list[Span], bytes]] = []

    def emit(batch: list[Span]) -> None:
        handed.append((batch, protobuf_request({}, ("t", "0"), batch)))

    view = Spans(emit)
    view.feed(read(path))
    view.finish()
    assert handed
    for batch, then in handed:
        assert protobuf_request({}, ("t", "0"), batch) == then


def _requests_only(path: Path, count: int, answered: bool) -> None:
    """A recording of ``count`` client requests and no turn (answered, or not)."""
    t = "2026-12-02T17:03:44.700000Z"
    lines = [{"kind": "start", "t": t, "format": "acp-proxy/1", "version": "0", "argv": ["a"],
              "pid": 1}]  # fmt: skip
    seq = 0
    for n in range(count):
        seq += 1
        request = {"jsonrpc": "2.0", "id": n, "method": "session/list", "params": {}}
        lines.append({"kind": "frame", "seq": seq, "t": t, "from": "client", "msg": request})
        if answered:
            seq += 1
            answer = {"jsonrpc": "2.0", "id": n, "result": {"sessions": []}}
            lines.append({"kind": "frame", "seq": seq, "t": t, "from": "agent", "msg": answer})
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")


def test_what_waits_for_a_batch_stays_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Requests under no turn are handed over 512 at a time, not held to the end; requests
    never answered are given up on past the bound (marked unanswered), as the wire model
    gives up on them: every span still arrives, once."""
    import acp_proxy.otlp.spans

    path = tmp_path / "requests.jsonl"
    _requests_only(path, 1_200, answered=True)
    batches: list[list[Span]] = []
    view = Spans(batches.append)
    view.feed(read(path))
    assert [len(b) for b in batches] == [512, 512]
    view.finish()
    assert sum(len(b) for b in batches) == 1_201  # (and the root)

    monkeypatch.setattr(acp_proxy.otlp.spans, "MAX_OPEN", 10)
    _requests_only(path, 30, answered=False)
    spans = spans_of(path)
    assert len(spans) == 31 and len({s.span_id for s in spans}) == 31
    assert sum(1 for s in spans if s.attributes.get("acp.request.unanswered")) == 30
