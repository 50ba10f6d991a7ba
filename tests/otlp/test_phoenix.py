"""Sessions in a real observability backend: Arize Phoenix (pinned; installed once in a
venv of its own, cached, started on free loopback ports, see ``otlp_backend``), every span
read back through its REST API. Each recording of ``recordings/`` arrives as one trace with a
turn span per ``session/prompt``, each tool call under its turn, the session id on every
span, the times within the recording and as many violation events as ``validate`` reports;
exporting again adds nothing; a live ``run --otlp`` arrives, and exporting its recording
afterwards adds nothing."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.conftest import RECORDINGS, invoke
from tests.otlp_backend import attributes, live_session, phoenix_server, settled, spans

PATHS = sorted(RECORDINGS.glob("*.jsonl"))
#: Phoenix files each request under the project its header names.
PROJECT_HEADER = "OTEL_EXPORTER_OTLP_HEADERS"

#: Phoenix is installed from PyPI (its own venv, cached): out of the quick loop.
pytestmark = [pytest.mark.timeout(1500), pytest.mark.agents]  # (the first run installs Phoenix)


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with phoenix_server(tmp_path_factory.mktemp("phoenix")) as url:
        yield url


def _export(url: str, project: str, *paths: Path) -> None:
    done = invoke(
        "export", "--otlp", url, *map(str, paths), env={PROJECT_HEADER: f"x-project-name={project}"}
    )
    assert done.returncode == 0, done.stderr


def _records(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def _ns(t: str) -> int:
    from acp_proxy.otlp.spans import time_ns

    value = time_ns(t)
    assert value is not None
    return value


def _findings(path: Path) -> int:
    """How many findings ``validate`` reports for ``path``."""
    done = invoke("validate", "--format", "json", str(path))
    return len(done.stdout.splitlines())


def test_every_recording_arrives_as_one_trace_and_again_adds_nothing(phoenix: str) -> None:
    """Each recording: one trace in Phoenix (found by its root's start, the recording's
    start record), a turn span per prompt under the root, each tool call span under a turn
    span, ``gen_ai.conversation.id`` on every span, every span within the recording's first
    and last record, as many ``acp.violation`` events as ``validate`` reports. A second
    export of them all: the same spans, no more."""
    _export(phoenix, "recordings", *PATHS)
    expected = sum(1 for _ in PATHS)
    got = settled(phoenix, "recordings", at_least=expected * 6)
    traces: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for span in got:
        traces[span["trace_id"]].append(span)
    assert len(traces) == len(PATHS)
    by_start = {
        next(s for s in trace if not s["parent_span_id"])["start_time_unix_nano"]: trace
        for trace in traces.values()
    }
    for path in PATHS:
        records = _records(path)
        start, last = _ns(records[0]["t"]), max(_ns(r["t"]) for r in records if r.get("t"))
        (trace,) = [t for s, t in by_start.items() if abs(s - start) <= 1000]
        (root,) = [s for s in trace if not s["parent_span_id"]]
        prompts = [
            r for r in records if r["kind"] == "frame" and r["from"] == "client"
            and isinstance(r["msg"], dict) and r["msg"].get("method") == "session/prompt"
        ]  # fmt: skip
        turns = [s for s in trace if s["name"].startswith("invoke_agent ")]
        assert len(turns) == len(prompts), path.name
        assert all(t["parent_span_id"] == root["span_id"] for t in turns)
        turn_ids = {t["span_id"] for t in turns}
        tools = [s for s in trace if s["name"].startswith("execute_tool")]
        assert tools and all(t["parent_span_id"] in turn_ids for t in tools), path.name
        for span in trace:
            assert attributes(span)["gen_ai.conversation.id"] == "sess_0001", span["name"]
            assert start - 1000 <= span["start_time_unix_nano"] <= last + 1000, span["name"]
            assert span["start_time_unix_nano"] <= span["end_time_unix_nano"] <= last + 1000
        events = [e for s in trace for e in s.get("events") or [] if e["name"] == "acp.violation"]
        assert len(events) == _findings(path), path.name
    assert sum(len(s.get("events") or []) for s in got) > 0  # (misbehaving breaks rules)

    _export(phoenix, "recordings", *PATHS)
    again = settled(phoenix, "recordings", at_least=len(got) + 1, timeout=8)
    assert sorted(s["span_id"] for s in again) == sorted(s["span_id"] for s in got)


def test_a_live_run_arrives_and_its_later_export_adds_nothing(phoenix: str, tmp_path: Path) -> None:
    """``run --otlp``: the session is in Phoenix as it ends (a trace, its two turns, each
    with its tool call), with the proxy's exit unchanged; exporting its recording afterwards
    adds no span."""
    record = tmp_path / "live.jsonl"
    env = {PROJECT_HEADER: "x-project-name=live"}
    session = live_session(record, "--otlp", phoenix, env=env)
    assert session.returncode == 0
    assert "not sent" not in session.stderr, session.stderr
    live = settled(phoenix, "live", at_least=9)
    assert len({s["trace_id"] for s in live}) == 1
    assert len([s for s in live if s["name"].startswith("invoke_agent ")]) == 2
    assert len([s for s in live if s["name"].startswith("execute_tool")]) == 2
    done = invoke("export", "--otlp", phoenix, str(record), env=env)
    assert done.returncode == 0, done.stderr
    assert f"{len(live)} spans, 1 traces" in done.stderr.decode()
    after = settled(phoenix, "live", at_least=len(live) + 1, timeout=8)
    assert sorted(s["span_id"] for s in after) == sorted(s["span_id"] for s in live)
    assert spans(phoenix, "live") == after or len(spans(phoenix, "live")) == len(after)
