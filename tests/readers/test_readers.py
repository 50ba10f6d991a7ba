"""Reading recordings: `show`, `follow`, `stats`, and the golden files in recordings/."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from acp_proxy.core.framing import parse_frame
from acp_proxy.readers.annotate import annotate, located
from acp_proxy.transcript.reading import read_records
from acp_proxy.transcript.records import FrameRecord, end_record, frame_record, start_record
from tests.conftest import PROXY, RECORDINGS, acp, clean_env, invoke

GOLDEN = sorted(RECORDINGS.glob("*.jsonl"))
MISBEHAVING_RULES = {
    "not-json", "prompt-result-message-id", "notice-severity-unknown", "notice-title-missing",
    "message-id-missing", "terminal-data-not-base64", "usage-fields", "usage-cost-fields",
    "stop-reason-unknown", "idle-without-running",
}  # fmt: skip


def test_the_golden_recordings_are_there():
    """recordings/ holds a clean session, a cancelled turn and a misbehaving session."""
    names = {p.name for p in GOLDEN}
    assert names == {
        "clean.jsonl",
        "cancelled.jsonl",
        "misbehaving.jsonl",
        "v1.jsonl",
        "v1-tour.jsonl",
    }


@pytest.mark.parametrize("name", ["clean.jsonl", "cancelled.jsonl", "v1.jsonl", "v1-tour.jsonl"])
def test_clean_recordings_validate_clean(name):
    """The clean recordings break no rule."""
    assert [f for _, f in located(annotate(read_records(RECORDINGS / name)))] == []


def test_the_misbehaving_recording_breaks_exactly_the_expected_rules():
    """validate finds exactly the rules the misbehaving agent breaks on purpose."""
    found = {f.rule for _, f in located(annotate(read_records(RECORDINGS / "misbehaving.jsonl")))}
    assert found == MISBEHAVING_RULES


def test_clean_recording_has_what_it_promises():
    """Streaming, a tool call with a permission request, a plan, usage, a cancelled turn."""

    def updates(name):
        msgs = [r.frame.value for r in read_records(RECORDINGS / name) if hasattr(r, "frame")]
        return msgs, [
            m["params"]["update"]["sessionUpdate"]
            for m in msgs
            if m.get("method") == "session/update"
        ]

    msgs, kinds = updates("clean.jsonl")
    assert {"agent_message_chunk", "tool_call_update", "plan_update", "usage_update"} <= set(kinds)
    assert any(m.get("method") == "session/request_permission" for m in msgs)
    msgs, _ = updates("cancelled.jsonl")
    assert any(m.get("method") == "session/cancel" for m in msgs)
    idles = [
        m["params"]["update"]
        for m in msgs
        if m.get("method") == "session/update" and m["params"]["update"].get("state") == "idle"
    ]
    assert idles[-1]["stopReason"] == "cancelled"


@pytest.mark.parametrize("path", GOLDEN, ids=lambda p: p.name)
def test_show_renders_every_recording(path):
    """show prints a line per stored frame, in both views, with no error."""
    proc = invoke("show", "--no-color", str(path))
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout.decode()
    frames = sum(1 for r in read_records(path) if hasattr(r, "frame"))
    assert (
        sum(1 for line in out.splitlines() if "client → agent" in line or "agent → client" in line)
        == frames
    )
    assert out.splitlines()[0].startswith("── session started")
    assert out.splitlines()[-1].startswith("── session ended")
    conversation = invoke("show", "--conversation", "--no-color", str(path))
    assert conversation.returncode == 0
    assert "── Turn 1" in conversation.stdout.decode()
    document = orjson.loads(invoke("show", "--conversation", "--json", str(path)).stdout)
    (session,) = document["connections"][0]["sessions"]
    assert session["turns"]


def test_the_v1_recording_is_one_turn_that_the_prompt_response_ends():
    """v1: no state_update; the prompt's {stopReason} response ends the turn, in every view."""
    records = list(read_records(RECORDINGS / "v1.jsonl"))
    frames = [r.frame.value for r in records if isinstance(r, FrameRecord)]
    assert frames[0]["params"]["protocolVersion"] == 1
    assert not any(
        m.get("params", {}).get("update", {}).get("sessionUpdate") == "state_update" for m in frames
    )
    (turn,) = orjson.loads(
        invoke("stats", "--format", "json", str(RECORDINGS / "v1.jsonl")).stdout
    )["turns"]
    assert turn["stop_reason"] == "end_turn" and turn["duration"] > 0
    out = invoke("show", "--conversation", "--no-color", str(RECORDINGS / "v1.jsonl")).stdout
    assert b"ended: end_turn" in out and b"tool call_2 'Read README.md' (read): completed" in out


def test_the_v1_timeline_says_which_tool_call_and_how_far_the_plan_is():
    """v1's tool_call and plan variants are summarised as their v2 counterparts are."""
    out = invoke("show", "--no-color", str(RECORDINGS / "v1-tour.jsonl")).stdout.decode()
    assert "tool_call \"call_2\" 'Read README.md' pending" in out
    assert "tool_call \"call_3\" 'ls' in_progress" in out
    assert "plan 0/1 done" in out


def test_show_timeline_lines_say_what_happened():
    """A response names its request's method and says ok; updates are summarized; findings sit under their frame."""
    out = invoke("show", "--no-color", str(RECORDINGS / "clean.jsonl")).stdout.decode()
    assert "response #2 session/prompt ok messageId" in out
    assert "state_update idle (end_turn)" in out
    assert "tool_call_update \"call_2\" 'Read README.md' pending" in out
    bad = (
        invoke("show", "--no-color", str(RECORDINGS / "misbehaving.jsonl"))
        .stdout.decode()
        .splitlines()
    )
    not_json = next(i for i, line in enumerate(bad) if "(not JSON)" in line)
    assert "↳ error not-json" in bad[not_json + 1]


def test_show_filters():
    """--from, --method, --session and --violations narrow the timeline."""
    path = str(RECORDINGS / "clean.jsonl")
    agent_only = invoke("show", "--no-color", "--from", "agent", path).stdout.decode()
    assert "client → agent" not in agent_only and "agent → client" in agent_only
    prompts = (
        invoke("show", "--no-color", "--method", "session/pr*", path).stdout.decode().splitlines()
    )
    frames = [line for line in prompts if "→" in line]
    assert len(frames) == 2 and "request" in frames[0] and "response" in frames[1]
    none = invoke("show", "--no-color", "--session", "nope", path).stdout.decode()
    assert "→" not in none
    violations = invoke(
        "show", "--no-color", "--violations", str(RECORDINGS / "misbehaving.jsonl")
    ).stdout.decode()
    shown = violations.splitlines()
    frame_rows = [i for i, line in enumerate(shown) if "→" in line]
    assert len(frame_rows) >= 5
    # every frame shown has its finding right under it, and nothing else is shown
    assert all("↳ " in shown[i + 1] for i in frame_rows)
    flagged = {
        r.seq
        for r in read_records(RECORDINGS / "misbehaving.jsonl")
        if isinstance(r, FrameRecord) and r.violations
    }
    assert {int(shown[i].split()[1]) for i in frame_rows} == flagged
    assert "notice-title-missing" in violations  # a standalone finding (notices are not stored)
    assert (
        "state_update running"
        not in invoke("show", "--no-color", "--violations", path).stdout.decode()
    )


def test_show_color_only_when_asked_or_on_a_terminal():
    """Colour codes appear with --color, never with --no-color or in a pipe by default."""
    path = str(RECORDINGS / "misbehaving.jsonl")
    assert b"\x1b[" in invoke("show", "--color", "always", path).stdout
    assert b"\x1b[" not in invoke("show", "--no-color", path).stdout
    assert b"\x1b[" not in invoke("show", path).stdout


def test_show_an_unreadable_recording_is_a_clear_error(tmp_path):
    """A missing file: exit 2, one line, no traceback."""
    proc = invoke("show", str(tmp_path / "missing.jsonl"))
    assert proc.returncode == 2
    assert proc.stderr.decode().startswith("acp-proxy show: cannot read")
    assert b"Traceback" not in proc.stderr


T0 = "2026-11-29T20:00:00.000000Z"


def at(seconds: float) -> str:
    whole = int(seconds)
    return f"2026-11-29T20:00:{whole:02d}.{round((seconds - whole) * 1e6):06d}Z"


def test_stats_figures_match_timings_the_test_wrote(tmp_path):
    """stats: frames and bytes per direction, methods, updates, latency per method, turns, findings."""
    frames = [
        (
            0.0,
            "client",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "method": "initialize",
                "params": {"protocolVersion": 2, "info": {"name": "c", "version": "1"}},
            },
        ),
        (
            0.5,
            "agent",
            {
                "jsonrpc": "2.0",
                "id": 0,
                "result": {"protocolVersion": 2, "info": {"name": "a", "version": "1"}},
            },
        ),
        (
            1.0,
            "client",
            {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {"cwd": "/"}},
        ),
        (1.1, "agent", {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}),
        (
            2.0,
            "client",
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/prompt",
                "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "x"}]},
            },
        ),
        (
            2.1,
            "agent",
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": "s",
                    "update": {"sessionUpdate": "state_update", "state": "running"},
                },
            },
        ),
        (
            2.2,
            "agent",
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": "s",
                    "update": {"sessionUpdate": "user_message", "messageId": "u", "content": []},
                },
            },
        ),
        (2.3, "agent", {"jsonrpc": "2.0", "id": 2, "result": {"messageId": "u"}}),
        (
            2.75,
            "agent",
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": "s",
                    "update": {
                        "sessionUpdate": "agent_message_chunk",
                        "messageId": "a",
                        "content": {"type": "text", "text": "y"},
                    },
                },
            },
        ),
        (
            4.0,
            "agent",
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": "s",
                    "update": {
                        "sessionUpdate": "state_update",
                        "state": "idle",
                        "stopReason": "end_turn",
                    },
                },
            },
        ),
        (4.5, "agent", b"oops"),
    ]
    path = tmp_path / "timed.jsonl"
    sizes = {"client": 0, "agent": 0}
    with open(path, "wb") as out:
        out.write(start_record(T0, ["agent"], 1))
        for seq, (when, side, message) in enumerate(frames, 1):
            raw = message if isinstance(message, bytes) else orjson.dumps(message)
            sizes[side] += len(raw) + 1
            out.write(frame_record(seq, at(when), side, parse_frame(raw)))
        out.write(end_record(at(5), 0, "client closed stdin"))
    figures = orjson.loads(invoke("stats", "--format", "json", str(path)).stdout)
    assert figures["frames"] == {"client": 3, "agent": 8}
    assert figures["bytes"] == sizes
    assert figures["methods"] == {
        "session/update": 4,
        "initialize": 1,
        "session/new": 1,
        "session/prompt": 1,
    }
    assert figures["updates"] == {"state_update": 2, "user_message": 1, "agent_message_chunk": 1}
    assert figures["latency"]["initialize"] == {"count": 1, "p50": 0.5, "p95": 0.5, "max": 0.5}
    assert figures["latency"]["session/prompt"]["max"] == pytest.approx(0.3)
    (turn,) = figures["turns"]
    assert turn["first_chunk"] == pytest.approx(0.75) and turn["duration"] == pytest.approx(2.0)
    assert turn["stop_reason"] == "end_turn" and turn["seq"] == 5
    assert figures["findings"] == {"not-json": 1}
    text = invoke("stats", str(path)).stdout.decode()
    assert "initialize" in text and "0.500" in text and "not-json" in text


def test_percentiles_are_nearest_rank():
    """p50 and p95 use the nearest-rank method."""
    from acp_proxy.readers.stats import percentile

    values = [float(v) for v in range(1, 21)]
    assert percentile(values, 0.5) == 10.0
    assert percentile(values, 0.95) == 19.0
    assert percentile([3.0], 0.95) == 3.0


def _read_until(proc, needle: str, timeout: float = 20.0) -> str:
    """Read the follower's output until a line contains needle."""
    seen = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline().decode()
        seen.append(line)
        if needle in line:
            return "".join(seen)
    raise AssertionError(f"{needle!r} not seen in {''.join(seen)!r}")


def _append(path: Path, data: bytes) -> None:
    with open(path, "ab") as out:
        out.write(data)


def _frame(seq: int, method: str) -> bytes:
    return frame_record(
        seq, at(seq), "client", parse_frame(orjson.dumps({"jsonrpc": "2.0", "method": method}))
    )


def test_follow_a_growing_file_and_stop_with_ctrl_c(tmp_path):
    """follow prints frames as they are appended; Ctrl-C exits quietly (130), no traceback."""
    path = tmp_path / "live.jsonl"
    path.write_bytes(start_record(T0, ["agent"], 1) + _frame(1, "_first"))
    with subprocess.Popen(
        [*PROXY, "follow", "--no-color", "--interval", "0.05", str(path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        _read_until(proc, "_first")
        _append(path, _frame(2, "_second")[:30])  # half a record: nothing yet
        time.sleep(0.3)
        _append(path, _frame(2, "_second")[30:])
        _read_until(proc, "_second")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130  # Ctrl-C, as a shell's command
        assert proc.stderr is not None
        assert b"Traceback" not in proc.stderr.read()


def test_follow_a_directory_moves_on_to_new_recordings(tmp_path):
    """Following a directory follows its newest recording, then each new one."""
    (tmp_path / "20261129T200000.000000Z-1.jsonl").write_bytes(
        start_record(T0, ["agent"], 1) + _frame(1, "_old")
    )
    with subprocess.Popen(
        [*PROXY, "follow", "--no-color", "--interval", "0.05", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=clean_env(),
    ) as proc:  # fmt: skip
        _read_until(proc, "_old")
        newer = tmp_path / "20261129T200100.000000Z-2.jsonl"
        newer.write_bytes(start_record(T0, ["agent"], 2))
        _read_until(proc, f"following {newer}")
        _append(newer, _frame(1, "_new"))
        _read_until(proc, "_new")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=20) == 130  # Ctrl-C, as a shell's command


def test_follow_a_missing_path_is_a_clear_error(tmp_path):
    """follow on a path that does not exist: exit 2 with a message."""
    proc = acp("follow", str(tmp_path / "nothing"))
    assert proc.returncode == 2 and b"No such file" in proc.stderr


def test_show_streams_large_recordings(tmp_path):
    """show prints each frame as it reads it: output starts before the input ends."""
    import os

    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    with subprocess.Popen(
        [*PROXY, "show", "--no-color", str(path)], stdout=subprocess.PIPE, env=clean_env()
    ) as proc:
        assert proc.stdout is not None
        with open(path, "wb") as writer:
            # more than stdout's buffer holds, less than the pipes do
            writer.write(start_record(T0, ["agent"], 1) + _frame(1, "_tick") * 200)
            writer.flush()
            assert b"session started" in proc.stdout.readline()
            assert b"_tick" in proc.stdout.readline()  # while the file is still open for writing
        assert proc.stdout.read().count(b"_tick") == 199
        assert proc.wait(timeout=20) == 0


def test_stats_counts_v1_turns_that_end_with_the_prompt_response(tmp_path):
    """In v1 the prompt's {stopReason} response ends the turn."""
    frames = [
        (
            0.0,
            "client",
            {
                "jsonrpc": "2.0",
                "id": 2,
                "method": "session/prompt",
                "params": {"sessionId": "s", "prompt": []},
            },
        ),
        (
            0.5,
            "agent",
            {
                "jsonrpc": "2.0",
                "method": "session/update",
                "params": {
                    "sessionId": "s",
                    "update": {
                        "sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": "y"},
                    },
                },
            },
        ),
        (1.5, "agent", {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "cancelled"}}),
    ]
    path = tmp_path / "v1.jsonl"
    with open(path, "wb") as out:
        out.write(start_record(T0, ["agent"], 1))
        for seq, (when, side, message) in enumerate(frames, 1):
            out.write(frame_record(seq, at(when), side, parse_frame(orjson.dumps(message))))
    (turn,) = orjson.loads(invoke("stats", "--format", "json", str(path)).stdout)["turns"]
    assert turn["first_chunk"] == pytest.approx(0.5) and turn["duration"] == pytest.approx(1.5)
    assert turn["stop_reason"] == "cancelled"


@settings(max_examples=300, deadline=None)
@example(text="ab" + " " * 300 + "ab", limit=10)  # a word beyond the start looked at
@example(text=" lorem ipsum dolor sit amet " * 9, limit=60)  # single spaces: the short way
@example(text="lorem\x85ipsum\u2028dolor\xa0sit", limit=60)  # other whitespace
@example(text="lorem ipsum dolor sit amet", limit=11)  # a word at the cut: the common case
@example(text="lorem ipsum dolor sit amet", limit=5)  # a space at limit: not that case
@example(text="lorem ipsum  dolor", limit=5)  # a space at limit, then more
@example(text="lorem         ", limit=5)  # a space at limit, then nothing
@example(text=" lorem ipsum dolor", limit=5)  # a space first
@example(text="lorem  ipsum dolor", limit=8)  # two spaces before the cut
@given(
    text=st.lists(
        st.one_of(
            st.text(alphabet=" \t\n\u3000", min_size=1, max_size=400),  # whitespace runs
            st.text(alphabet="ab\u00e9", min_size=1, max_size=5),  # words
        ),
        max_size=12,
    ).map("".join),
    limit=st.integers(min_value=2, max_value=80),
)
def test_first_words_looks_at_the_start_only_and_says_the_same(text, limit):
    """The timeline's text excerpt reads only the start of a long text, with the result of
    collapsing the whole text's whitespace and cutting it."""
    from acp_proxy.readers.summary import first_words

    whole = " ".join(text.split())
    expected = whole if len(whole) <= limit else whole[: limit - 1] + "…"
    assert first_words(text, limit) == expected


def test_the_readers_never_load_the_logging_machinery(tmp_path):
    """validate and show never log: they do not load structlog (and the asyncio it brings),
    a third of their start. A logger asked for before anything configured logging still
    writes to stderr, never to stdout."""
    import sys

    script = tmp_path / "probe.py"
    script.write_text(
        "import sys\n"
        "from acp_proxy.cli import main\n"
        "sys.argv = ['acp-proxy', *sys.argv[1:]]\n"
        "try:\n"
        "    main()\n"
        "finally:\n"
        "    print('loaded:', [m for m in ('structlog', 'asyncio') if m in sys.modules],\n"
        "          file=sys.stderr)\n"
    )
    for command in ("validate", "show"):
        run = [sys.executable, str(script), command, str(RECORDINGS / "clean.jsonl")]
        result = subprocess.run(run, capture_output=True, env=clean_env())
        assert result.returncode == 0, result.stderr
        assert b"loaded: []" in result.stderr
    logs = "from acp_proxy.log import get_logger\nget_logger().warning('unconfigured')\n"
    result = subprocess.run([sys.executable, "-c", logs], capture_output=True, env=clean_env())
    assert result.stdout == b"" and b"unconfigured" in result.stderr


def test_a_view_that_knows_nothing_of_the_short_way_is_right_on_a_streamed_turn(tmp_path):
    """A new view (frames per method and update variant, and each chunk's seq and text),
    written plainly as a readers.items.Addon with only its add(): fed the items the
    readers read the short way, it counts what the long way counts, on a recorded
    1,000-chunk streamed turn (where the short way takes runs); so does plain()."""
    import sys
    from collections import Counter

    from acp_proxy.devtools.bench import pending_stream
    from acp_proxy.readers.annotate import RUN, annotate, plain, read
    from acp_proxy.transcript.items import Addon, Annotated, Repeated
    from acp_proxy.transcript.reading import open_lines, open_recording

    record, script = tmp_path / "stream.jsonl", tmp_path / "agent.py"
    # The bench's agent, with each chunk's text its own (the short way must carry it).
    script.write_text(
        "import sys\n"
        "from acp_proxy.devtools import bench\n"
        "bench.CHUNK = b''.join(bench.CHUNK.replace(b'lorem', b'chunk-%d' % n) for n in range(1000))\n"
        "bench.pending_agent(0, 1)\n"
    )
    agent = [sys.executable, str(script)]
    pending_stream([*PROXY, "run", "--record", str(record), "--", *agent], 1000)

    class PerMethod(Addon):
        def __init__(self) -> None:
            self.counts: Counter[str] = Counter()
            self.texts: list[tuple[int, str]] = []

        def add(self, item: Annotated) -> None:
            message = item.message
            if message is None:
                return
            update = message.update or {}
            self.counts[f"{message.method} {update.get('sessionUpdate', '')}".strip()] += 1
            if message.variant == "agent_message_chunk":
                self.texts.append((message.seq, message.params["update"]["content"]["text"]))

    short = list(read(open_lines(str(record)), run=RUN))
    assert any(type(item) is Repeated and len(item.frames) > 1 for item in short)  # runs
    long_way, short_way, through_plain = PerMethod(), PerMethod(), PerMethod()
    long_way.feed(annotate(open_recording(str(record))))
    short_way.feed(short)
    for item in plain(short):
        through_plain.add(item)
    assert long_way.counts["session/update agent_message_chunk"] == 1000
    assert len({text for _, text in long_way.texts}) == 1000
    for view in (short_way, through_plain):
        assert view.counts == long_way.counts and view.texts == long_way.texts


def test_every_reader_counts_the_same_connections_on_an_odd_file(tmp_path):
    """Frames after an end record, with no start record of their own, are a connection of
    their own: stats, show --conversation --json and report say so alike (one answer, the
    annotator's), on that file and on every shipped recording."""
    import json
    import re

    from acp_proxy.core.framing import parse_frame
    from acp_proxy.transcript.records import end_record, frame_record, start_record

    t = "2026-01-01T00:00:00.000000Z"
    init = {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": 1}}
    answer = {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1, "agentCapabilities": {}}}
    odd = tmp_path / "odd.jsonl"
    with open(odd, "wb") as out:
        out.write(start_record(t, ["agent"], 1))
        out.write(frame_record(1, t, "client", parse_frame(orjson.dumps(init))))
        out.write(frame_record(2, t, "agent", parse_frame(orjson.dumps(answer))))
        out.write(end_record(t, 0, "client closed stdin"))
        out.write(frame_record(3, t, "client", parse_frame(orjson.dumps(init))))
        out.write(frame_record(4, t, "agent", parse_frame(orjson.dumps(answer))))
    root = RECORDINGS
    for path, expected in [(odd, 2), *((p, 1) for p in sorted(root.glob("*.jsonl")))]:
        said = [
            invoke("stats", "--format", "json", str(path)),
            invoke("show", "--conversation", "--json", str(path)),
            invoke("report", str(path), "-o", str(tmp_path / "page.html")),
        ]
        assert [proc.returncode for proc in said] == [0] * 3, [proc.stderr for proc in said]
        stats, conversation = json.loads(said[0].stdout), json.loads(said[1].stdout)
        page = tmp_path / "page.html"
        data = re.search(r'id="report-data">(.*?)</script>', page.read_text(), re.S)
        assert data is not None
        sections = json.loads(data.group(1))["sections"]
        counts = (stats["sessions"], len(conversation["connections"]), len(sections))
        assert counts == (expected,) * 3, (path.name, counts)


def _odd_recording(path: Path) -> Path:
    """A v2 session whose frames leave out what they may (or should not): no protocol
    version, a state without its state, errors without codes, a usage without a currency, a
    plan entry without a priority, a compaction whose status is cleared."""
    t = "2026-11-30T10:00:00.000000Z"

    def update(body: dict[str, object]) -> dict[str, object]:
        return {"jsonrpc": "2.0", "method": "session/update",
                "params": {"sessionId": "s", "update": body}}  # fmt: skip

    frames: list[tuple[str, dict[str, object]]] = [
        ("client", {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}}),
        ("agent", {"jsonrpc": "2.0", "id": 0, "result": {"agentCapabilities": {}}}),
        ("client", {"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
                    "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "go"}]}}),
        ("agent", update({"sessionUpdate": "state_update"})),
        ("agent", update({"sessionUpdate": "state_update", "state": "running"})),
        ("agent", update({"sessionUpdate": "plan_update", "plan": {
            "type": "items", "planId": "p", "entries": [{"content": "x", "status": "pending"}]}})),
        ("agent", update({"sessionUpdate": "compaction_update", "compactionId": "c",
                          "status": None})),
        ("agent", update({"sessionUpdate": "usage_update", "used": 5, "cost": {"amount": 1}})),
        ("agent", update({"sessionUpdate": "notice", "title": "t"})),
        ("client", {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                    "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "again"}]}}),
        ("agent", {"jsonrpc": "2.0", "id": 2, "error": {"message": "busy"}}),
        ("agent", update({"sessionUpdate": "state_update", "state": "idle",
                          "stopReason": "error", "error": {"message": "it broke"}})),
        ("agent", {"jsonrpc": "2.0", "id": 1, "result": {"messageId": None}}),
    ]  # fmt: skip
    with open(path, "wb") as out:
        out.write(start_record(t, ["agent"], 1))
        for seq, (side, message) in enumerate(frames, 1):
            out.write(frame_record(seq, t, side, parse_frame(orjson.dumps(message))))
        out.write(end_record(t, 0, "done"))
    return path


def test_no_python_on_screen(tmp_path):
    """No reader prints Python's None (nor the demo): what a frame leaves out is left out
    (`cost 1`, not `cost 1 None`); a v1 plan is `plan:`, not `plan plan:`; v1's
    current_mode_update is the session's mode, not an unknown update."""
    import re

    odd = _odd_recording(tmp_path / "odd.jsonl")
    for path in [*GOLDEN, odd]:
        for command in (["show"], ["show", "--conversation"], ["stats"]):
            proc = invoke(*command, str(path))
            assert proc.returncode in (0, 1), proc.stderr
            said = proc.stdout.decode()
            assert not re.search(r"\bNone\b|plan plan:|unknown update", said), (command, said)
        page = tmp_path / f"{path.stem}.html"
        assert invoke("report", str(path), "-o", str(page)).returncode == 0
        assert not re.search(r"\bNone\b", page.read_text())
    shown = invoke("show", "--conversation", str(RECORDINGS / "misbehaving.jsonl")).stdout.decode()
    assert "usage: -1/200000 tokens, cost 1\n" in shown
    tour = invoke("show", "--conversation", str(RECORDINGS / "v1-tour.jsonl")).stdout.decode()
    assert "  mode: code\n" in tour and "  plan:\n" in tour
    timeline = invoke("show", str(odd)).stdout.decode()
    assert "error: busy" in timeline and "usage_update 5 tokens, cost 1" in timeline
    demo = acp("demo", "--scenario", "misbehaving", "--delay", "0", "--record",
               str(tmp_path / "demo.jsonl"))  # fmt: skip
    said = demo.stdout.decode() + demo.stderr.decode()
    assert "accepted, no messageId" in said and not re.search(r"\bNone\b", said), said


def test_stats_over_several_recordings_says_which_each_turn_is_in():
    """Seqs and session ids repeat across files: over several recordings each turn names its
    recording (text: a column, only then; json: always)."""
    clean, cancelled = str(RECORDINGS / "clean.jsonl"), str(RECORDINGS / "cancelled.jsonl")
    text = invoke("stats", clean, cancelled).stdout.decode().splitlines()
    turns = text[text.index("prompt turns:") + 1 : text.index("findings:") - 1]
    assert turns[0].split()[-1] == "recording"
    assert [row.split()[-1] for row in turns[1:]] == [clean, cancelled]
    alone = invoke("stats", clean).stdout.decode().splitlines()
    assert alone[alone.index("prompt turns:") + 1].split()[-2:] == ["stop", "reason"]
    document = orjson.loads(invoke("stats", "--format", "json", clean, cancelled).stdout)
    assert [turn["recording"] for turn in document["turns"]] == [clean, cancelled]


#: Runs ``acp-proxy ARGS`` as a child, and prints its peak memory (KiB) on stderr's last line.
_PEAK = """
import resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "acp_proxy", *sys.argv[1:]])
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)
sys.exit(done.returncode)
"""


def _long_line_recording(path: Path, size: int) -> None:
    """A recording of one line of ``size`` bytes past the relay's cap, recorded whole (its
    base64, written a block at a time, as the recorder copies a spool)."""
    import base64

    from acp_proxy.core.framing import oversized_frame
    from acp_proxy.transcript.records import base64_record_ends

    found = [{"rule": "oversized-frame", "level": "error", "message": "m", "spec": "s"}]
    before, after = base64_record_ends(1, "2026-01-01T00:00:01Z", "agent",
                                       oversized_frame(b"", size), found)  # fmt: skip
    block = bytes(b for b in range(256) if b != 10) * 12336  # (3 MiB: whole base64 quanta)
    with path.open("wb") as out:
        out.write(start_record("2026-01-01T00:00:00Z", ["agent"], 1))
        out.write(before)
        left = size
        while left:
            piece = block[: min(left, len(block))]
            out.write(base64.b64encode(piece))
            left -= len(piece)
        out.write(after)
        out.write(end_record("2026-01-01T00:00:02Z", 0, "client closed stdin"))


def test_the_readers_read_a_200_mib_recorded_line_in_flat_memory(tmp_path):
    """A recorded 200 MiB line (its record 267 MB of base64): every reader reads it in flat
    memory, as the README promises (before: about 560 MiB in validate, stats, show and ls,
    900 MiB in search), and says what it is as before."""
    size = 200 << 20
    recording = tmp_path / "long.jsonl"
    _long_line_recording(recording, size)
    said = {
        "ls": f"{recording.stat().st_size:,}",
        "validate": "error oversized-frame: the agent sent a line of 209,715,200 bytes",
        "stats": "agent → client         1 frame      209715201 bytes",
        "show": "(a line of 209,715,200 bytes, recorded whole)",
        "search": "",
    }
    peaks = {}
    for reader, words in said.items():
        args = [str(tmp_path)] if reader == "ls" else [str(recording)]
        if reader == "search":
            args = ["zzz", *args]
        done = subprocess.run([sys.executable, "-c", _PEAK, reader, *args],
                              capture_output=True, timeout=120, env=clean_env())  # fmt: skip
        assert b"Traceback" not in done.stderr and done.returncode in (0, 1), done.stderr
        assert words in done.stdout.decode(), (reader, done.stdout[:500])
        peaks[reader] = int(done.stderr.split()[-1]) // 1024
    assert max(peaks.values()) < 150, f"peak MiB: {peaks}"


def test_a_long_line_is_read_as_it_comes_and_as_the_short_way_reads_it(monkeypatch):
    """Past the long-line threshold, a whole recorded line's record is read in flat memory
    (its beginning, its size, recorded whole), one whose base64 breaks is an unreadable line
    that says why (the lines after it still read), any other long line is read whole, and
    an unterminated last one too."""
    import base64
    import io

    from acp_proxy.core.framing import oversized_frame
    from acp_proxy.transcript import reading
    from acp_proxy.transcript.records import (
        ReadInPart,
        UnreadableLine,
        base64_record_ends,
        parse_record,
        recorded_whole,
    )

    monkeypatch.setattr(reading, "LONG_LINE", 1000)
    data = bytes(range(256)) * 400  # 102,400 bytes
    before, after = base64_record_ends(1, "t", "agent", oversized_frame(b"", len(data)))
    good = before + base64.b64encode(data) + after.rstrip(b"\n")
    bad = good.replace(b"AAEC", b"A*EC", 1)
    msg = frame_record(2, "t", "client", parse_frame(b'{"x":"' + b"y" * 5000 + b'"}')).rstrip()
    stream = io.BytesIO(b"\n".join([good, bad, msg, b'{"kind":"end","t":"t"}', good]))
    lines = reading.iter_lines(stream, flat=True)
    records = [parse_record(n, line) for n, line in enumerate(lines, 1)]
    first, broken, whole, end, last = records
    assert isinstance(first, FrameRecord) and isinstance(first.frame, ReadInPart)
    assert first.frame.raw == data[:65536] and first.frame.oversized == len(data)
    assert recorded_whole(first.frame) and first.seq == 1
    assert isinstance(broken, UnreadableLine) and "does not decode" in broken.reason
    assert whole == parse_record(3, msg) and isinstance(whole, FrameRecord)
    assert end is not None and isinstance(last, FrameRecord) and recorded_whole(last.frame)
    cut = before + base64.b64encode(data[:3000]) + after.rstrip(b"\n")  # its beginning only
    (read,) = [parse_record(1, line) for line in reading.iter_lines(io.BytesIO(cut), flat=True)]
    assert isinstance(read, FrameRecord) and not recorded_whole(read.frame)
    # what needs every byte (replay, redact) reads it whole
    (read,) = [parse_record(1, line) for line in reading.iter_lines(io.BytesIO(good))]
    assert isinstance(read, FrameRecord) and read.frame.raw == data
