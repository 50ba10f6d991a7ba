"""`acp-proxy diff A B`, through real processes, on recordings made by `acp-proxy run` with the
example agent: the same scenario recorded twice (different ids, times and pacing) diffs clean;
each kind of change is reported once, in its layer, with the seqs on both sides."""

from __future__ import annotations

import functools
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.core.framing import parse_frame
from acp_proxy.core.times import format_time, parse_time
from acp_proxy.devtools.demo import run_demo
from acp_proxy.transcript.records import frame_record
from tests.conftest import invoke


def recorded(path: Path, first_id: int, delay: float = 0.0) -> Path:
    agent = [sys.executable, "-m", "acp_proxy.devtools.example_agent", "--delay", str(delay),
             "--first-id", str(first_id)]  # fmt: skip
    assert run_demo(path, delay=delay, echo=None, scenario="clean", agent=agent) == 0
    return path


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The same scenario twice: other ids (sessions, messages, tool calls, request ids),
    other times, and the pacing of two runs (timing differences under the floor are noise)."""
    where = tmp_path_factory.mktemp("diff")
    return recorded(where / "a.jsonl", 1), recorded(where / "b.jsonl", 100)


def diff(*args: str) -> subprocess.CompletedProcess[bytes]:
    return invoke("diff", *args)


def as_json(a: Path, b: Path, *options: str) -> dict[str, Any]:
    proc = diff("--format", "json", *options, str(a), str(b))
    document: dict[str, Any] = orjson.loads(proc.stdout)
    assert proc.returncode == (0 if document["identical"] else 1), proc.stderr
    return document


def edited(source: Path, target: Path, change: Callable[[list[dict[str, Any]]], None]) -> Path:
    """A copy of a recording with its records changed (frames renumbered in order)."""
    records = [orjson.loads(line) for line in source.read_bytes().splitlines()]
    change(records)
    seq = 0
    with open(target, "wb") as out:
        for record in records:
            if record["kind"] != "frame":
                out.write(orjson.dumps(record) + b"\n")
                continue
            seq += 1
            frame = parse_frame(orjson.dumps(record["msg"]))
            out.write(frame_record(seq, record["t"], record["from"], frame))
    return target


def updates(records: list[dict[str, Any]], variant: str) -> list[dict[str, Any]]:
    return [
        r for r in records
        if r["kind"] == "frame" and r["msg"].get("params", {}).get("update", {}).get("sessionUpdate") == variant
    ]  # fmt: skip


def test_the_same_scenario_twice_diffs_clean(pair):
    """Two runs of one scenario exit 0 (timing is shown, never counted unless asked: a
    shared machine's hiccup in a 2 ms turn is not a slower agent), and every layer but
    timing has nothing to say."""
    a, b = pair
    proc = diff(str(a), str(b))
    assert proc.returncode == 0, proc.stdout
    assert as_json(a, b)["identical"] is True
    layers = "handshake,conversation,wire,findings"
    assert diff("--only", layers, str(a), str(b)).stdout.decode() == "no differences\n"
    assert as_json(a, b, "--only", layers)["identical"] is True


def changed_capability(records):
    caps = records[2]["msg"]["result"]["capabilities"]  # the initialize result
    caps.setdefault("session", {}).setdefault("prompt", {})["audio"] = {}


def extra_tool_call(records):
    tool = updates(records, "tool_call_update")[0]
    copy = orjson.loads(orjson.dumps(tool))
    copy["msg"]["params"]["update"].update({"toolCallId": "call_extra", "title": "Grep"})
    records.insert(records.index(tool) + 1, copy)


def changed_tool_status(records):
    for record in updates(records, "tool_call_update"):
        if record["msg"]["params"]["update"].get("status") == "completed":
            record["msg"]["params"]["update"]["status"] = "failed"


def changed_stop_reason(records):
    for record in updates(records, "state_update"):
        update = record["msg"]["params"]["update"]
        if update.get("stopReason") == "end_turn":
            update["stopReason"] = "max_tokens"


def different_text(records):
    chunk = updates(records, "agent_message_chunk")[3]
    chunk["msg"]["params"]["update"]["content"]["text"] = "an"


def inserted_update(records):
    chunk = updates(records, "agent_message_chunk")[2]
    info = orjson.loads(orjson.dumps(chunk))
    info["msg"]["params"]["update"] = {"sessionUpdate": "session_info_update", "title": "README"}
    records.insert(records.index(chunk) + 1, info)


def finding_on_one_side(records):
    chunk = updates(records, "agent_message_chunk")[1]
    del chunk["msg"]["params"]["update"]["messageId"]


def three_times_slower(records):
    frames = [r for r in records if r["kind"] == "frame"]
    prompt = next(r for r in frames if r["msg"].get("method") == "session/prompt")
    start = parse_time(prompt["t"])
    assert start is not None
    for record in frames[frames.index(prompt) + 1 :]:  # the turn takes three times as long
        when = parse_time(record["t"])
        assert when is not None
        record["t"] = format_time(start + (when - start) * 3 + timedelta(seconds=0.2))
    for record in records:
        if record["kind"] == "end":
            record["t"] = format_time(datetime.now().astimezone())


CHANGES = {
    "capability": (
        changed_capability,
        "handshake",
        "agent.capabilities.session.prompt.audio added",
    ),
    "extra tool call": (extra_tool_call, "conversation", "tool call 2 only in B"),
    "tool status": (changed_tool_status, "conversation", "tool call 1 status"),
    "stop reason": (changed_stop_reason, "conversation", "stop reason"),
    "agent text": (different_text, "conversation", "agent text"),
    "inserted update": (inserted_update, "wire", "frames only in B"),
    "finding": (finding_on_one_side, "findings", "message-id-missing"),
    "slower": (three_times_slower, "timing", "turn duration (s)"),
}


@pytest.mark.parametrize("name", sorted(CHANGES))
def test_each_change_is_reported_once_in_its_layer_with_both_seqs(pair, tmp_path, name):
    a, b = pair
    change, layer, what = CHANGES[name]
    changed = edited(b, tmp_path / "changed.jsonl", change)
    document = as_json(a, changed, *(("--timing",) if layer == "timing" else ()))
    assert document["identical"] is False
    here = [d for d in document["differences"] if d["layer"] == layer and d["what"] == what]
    assert len(here) == 1, document["differences"]
    assert here[0]["a_seq"] is not None or here[0]["b_seq"] is not None
    if layer != "handshake" or name != "capability":
        assert here[0]["b_seq"] is not None
    # the text output names the same difference, with both seqs
    text = diff(str(a), str(changed)).stdout.decode()
    assert f"{layer}:" in text and what in text
    assert f"A:{here[0]['a_seq'] if here[0]['a_seq'] is not None else '-'} B:" in text
    # --only picks layers: without this one, the change is not reported
    others = ",".join(
        x for x in ("handshake", "conversation", "wire", "findings", "timing") if x != layer
    )
    silent = as_json(a, changed, "--only", others)
    assert [d for d in silent["differences"] if d["what"] == what and d["layer"] == layer] == []


def test_two_runs_that_differ_only_in_timing_exit_0_unless_timing_is_asked_for(pair, tmp_path):
    """Model latency varies from run to run: a CI gate must not flap on it. The timing is
    shown, said not to count, and counts with --timing (or --only timing)."""
    a, b = pair
    slow = edited(b, tmp_path / "slow.jsonl", three_times_slower)
    shown = diff(str(a), str(slow))
    said = shown.stdout.decode()
    assert shown.returncode == 0, said
    assert "turn duration (s)" in said and "not counted" in said
    assert as_json(a, slow)["identical"] is True
    assert diff("--timing", str(a), str(slow)).returncode == 1
    assert diff("--only", "timing", str(a), str(slow)).returncode == 1
    assert as_json(a, slow, "--timing")["identical"] is False
    refused = diff("--timing", "--only", "wire", str(a), str(slow))
    assert refused.returncode == 2 and b"--timing has no effect" in refused.stderr


def test_ignore_silences_what_it_names(pair, tmp_path):
    a, b = pair
    changed = edited(b, tmp_path / "text.jsonl", different_text)
    assert as_json(a, changed, "--only", "conversation")["identical"] is False
    quiet = as_json(a, changed, "--only", "conversation", "--ignore", "params.update.content.text")
    assert quiet["identical"] is True


def test_meta_is_left_out_unless_asked(pair, tmp_path):
    a, b = pair

    def meta(records):
        records[2]["msg"]["result"]["_meta"] = {"build": "nightly"}  # the initialize result

    changed = edited(b, tmp_path / "meta.jsonl", meta)
    assert as_json(a, changed, "--slower", "100")["identical"] is True
    shown = as_json(a, changed, "--meta", "--only", "handshake")["differences"]
    assert [d["what"] for d in shown] == ["agent._meta.build added"]


def test_a_value_removed_is_not_shown_as_null(pair, tmp_path):
    a, b = pair

    def initialize(records):
        return next(
            r["msg"]["params"] for r in records if r.get("msg", {}).get("method") == "initialize"
        )

    def removed(records):
        del initialize(records)["capabilities"]

    def nulled(records):
        initialize(records)["capabilities"] = None

    gone = diff("--only", "handshake", str(a), str(edited(b, tmp_path / "gone.jsonl", removed)))
    assert "client.capabilities removed (A:1 B:-)\n    A: {}   B: (absent)" in gone.stdout.decode()

    def emptied(records):
        initialize(records)["capabilities"] = {"fs": {}}

    def filled(records):
        initialize(records)["capabilities"] = {"fs": {"readTextFile": True}}

    a_filled = edited(a, tmp_path / "filled.jsonl", filled)
    b_emptied = edited(b, tmp_path / "emptied.jsonl", emptied)
    inside = diff("--only", "handshake", str(a_filled), str(b_emptied)).stdout.decode()
    assert inside == (  # what A had in it, not the emptied object as "added"
        "handshake:\n  client.capabilities.fs.readTextFile removed (A:1 B:-)\n"
        "    A: true   B: (absent)\n"
    )
    null = diff("--only", "handshake", str(a), str(edited(b, tmp_path / "null.jsonl", nulled)))
    assert "client.capabilities changed (A:1 B:1)\n    A: {}   B: null" in null.stdout.decode()


def test_unreadable_input_exits_2_with_one_line(pair, tmp_path):
    a, _ = pair
    proc = diff(str(a), str(tmp_path / "missing.jsonl"))
    assert proc.returncode == 2
    said = proc.stderr.decode().strip().splitlines()
    assert len(said) == 1 and "missing.jsonl" in said[0] and "Traceback" not in proc.stderr.decode()
    bad = diff("--only", "everything", str(a), str(a))
    assert bad.returncode == 2 and "choose from" in bad.stderr.decode()
    second = diff("--session", "2", str(a), str(a))
    assert (
        second.returncode == 2
        and "has 1 connection; there is no connection 2" in second.stderr.decode()
    )


def test_report_against_lists_the_differences_linked_to_their_rows(pair, tmp_path):
    """`report B --against A`: the page carries what `diff A B` finds, each difference with
    B's seq; in a browser the panel is there and the page loads without a script error."""
    import re

    from tests.readers.test_report import CHROMIUM, dom

    a, b = pair
    changed = edited(b, tmp_path / "changed.jsonl", changed_tool_status)
    page = tmp_path / "page.html"
    proc = invoke("report", str(changed), "--against", str(a), "-o", str(page))
    assert proc.returncode == 0, proc.stderr
    data = re.search(r'id="report-data">(.*?)</script>', page.read_text(), re.S)
    assert data is not None
    differences = orjson.loads(data.group(1))["diff"]["differences"]
    assert differences == as_json(a, changed)["differences"]
    assert any(d["what"] == "tool call 1 status" and d["b_seq"] for d in differences)
    if CHROMIUM is None:
        pytest.skip("chromium is not installed: the page's panel is not looked at")
    html = dom(page, "", tmp_path)
    assert 'data-ready="1"' in html and 'data-errors="0"' in html
    assert "Differences against" in html and "tool call 1 status" in html
    assert re.search(r'href="#seq=\d+">B:\d+</a>', html)


def streamed(
    path: Path, chunks: int, insert_at: int | None = None, time_text: bool = False
) -> Path:
    """A v2 session whose one turn streams ``chunks`` message chunks (recorded the way the
    recorder writes them, so readers take them in runs), an update inserted at
    ``insert_at``; one chunk's text a time when ``time_text``."""
    from acp_proxy.transcript.records import end_record, start_record

    t = "2026-11-30T10:00:00.000000Z"
    session = {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": "s"}}
    frames: list[tuple[str, dict[str, Any]]] = [
        ("client", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": 2, "clientCapabilities": {}}}),
        ("agent", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 2,
                   "agentCapabilities": {}, "info": {"name": "a", "version": "1"}}}),
        ("client", {"jsonrpc": "2.0", "id": 1, "method": "session/new",
                    "params": {"cwd": "/", "mcpServers": []}}),
        ("agent", {"jsonrpc": "2.0", "id": 1, "result": {"sessionId": "s"}}),
        ("client", {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
                    "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "go"}]}}),
    ]  # fmt: skip
    for n in range(chunks):
        if n == insert_at:
            info = {"sessionUpdate": "session_info_update", "title": "t"}
            frames.append(("agent", {**session, "params": {"sessionId": "s", "update": info}}))
        text = "2026-12-01T00:00:00Z" if time_text and n == 7 else f"word {n} "
        update: dict[str, Any] = {"sessionUpdate": "agent_message_chunk", "messageId": "m",
                                  "content": {"type": "text", "text": text}}  # fmt: skip
        frames.append(("agent", {**session, "params": {"sessionId": "s", "update": update}}))
    frames.append(("agent", {"jsonrpc": "2.0", "id": 2, "result": {"stopReason": "end_turn"}}))
    with open(path, "wb") as out:
        out.write(start_record(t, ["agent"], 1))
        for seq, (side, message) in enumerate(frames, 1):
            out.write(frame_record(seq, t, side, parse_frame(orjson.dumps(message))))
        out.write(end_record(t, 0, "done"))
    return path


def test_a_streamed_turn_read_the_short_way_boils_down_as_read_in_full(tmp_path):
    """load() takes a streamed turn's repeated chunks in runs (its Addon.add_run) and gets the
    session reading every frame gets: wire, seqs, text (a time written <time>), with and
    without the text ignored."""
    from acp_proxy.readers.diff import load

    path = streamed(tmp_path / "s.jsonl", 3000, insert_at=1500, time_text=True)
    for ignore in ((), ("params.update.content.text",)):
        short, full = load(str(path), ignore=ignore), load(str(path), ignore=ignore, short=False)
        assert short == full
        # the prompt, 3,000 chunks, the inserted update, the prompt's answer
        assert len(short.turns[-1].wire) == 3003 and short.turns[-1].seqs[-1] == 3007
    assert "<time>" in "".join(load(str(path)).turns[-1].text)


def test_what_the_user_saw_is_the_conversation_models_a_whole_message_replaces_its_own(tmp_path):
    """The conversation layer reads the turn from the conversation model, by its entity rules:
    a whole ``agent_message`` replaces its own message's content, not the turn's other
    messages (so a change in the one before it shows, named at its chunk)."""

    def recording(path: Path, first: str) -> Path:
        def add(records: list[dict[str, Any]]) -> None:
            chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "m",
                     "content": {"type": "text", "text": first}}  # fmt: skip
            whole = {"sessionUpdate": "agent_message", "messageId": "n",
                     "content": [{"type": "text", "text": "two"}]}  # fmt: skip
            at = next(
                i
                for i, r in enumerate(records)
                if r.get("msg", {}).get("result", {}).get("stopReason")
            )
            records[at:at] = [
                {"kind": "frame", "t": records[at]["t"], "from": "agent",
                 "msg": {"jsonrpc": "2.0", "method": "session/update",
                         "params": {"sessionId": "s", "update": update}}}
                for update in (chunk, whole)
            ]  # fmt: skip

        return edited(streamed(path, 0), path, add)

    a, b = recording(tmp_path / "a.jsonl", "one "), recording(tmp_path / "b.jsonl", "ONE ")
    [text] = as_json(a, b, "--only", "conversation")["differences"]
    assert (text["what"], text["a"], text["b"]) == ("agent text", "one two", "ONE two")
    assert text["a_seq"] == text["b_seq"] == 6  # the chunk, not the whole message after it


def test_two_long_streamed_turns_diff_as_one_insertion_or_one_shorter_run(tmp_path):
    """20,000 chunks against the same with an update inserted in the middle: one insertion
    (not a cascade); against 19,900 chunks: the run of chunks shown as a run, 100 short. At
    once, where the frame by frame alignment of such turns took minutes."""
    a = streamed(tmp_path / "a.jsonl", 20_000)
    b = streamed(tmp_path / "b.jsonl", 20_000, insert_at=10_000)
    c = streamed(tmp_path / "c.jsonl", 19_900)
    (inserted,) = as_json(a, b, "--only", "wire")["differences"]
    assert inserted["what"] == "frames only in B"
    assert inserted["b"] == ["← session/update session_info_update"]
    assert inserted["b_seq"] == 5 + 10_000 + 1
    (shorter,) = as_json(a, c, "--only", "wire")["differences"]
    assert shorter["what"] == "frames only in A"
    assert shorter["a"] == ["← session/update agent_message_chunk * 100"]


def test_the_text_diff_has_one_heading_per_turn_and_names_a_line_that_is_not_json(pair, tmp_path):
    """Findings of several rules in two turns, and a line that is not JSON in one: each
    turn is a heading once in a layer, in turn order, and the line is `(not JSON)`, not a
    response."""

    def break_it(records: list[dict[str, Any]]) -> None:
        for record in updates(records, "agent_message_chunk"):
            del record["msg"]["params"]["update"]["messageId"]  # message-id-missing, each turn
        for record in updates(records, "tool_call")[:1]:
            record["msg"]["params"]["update"]["status"] = "bogus"
        at = next(i for i, r in enumerate(records) if r["kind"] == "frame")
        records.insert(at + 1, {"kind": "frame", "t": records[at]["t"], "from": "agent",
                                "msg": "placeholder"})  # fmt: skip

    broken = edited(pair[0], tmp_path / "broken.jsonl", break_it)
    data = broken.read_bytes().replace(b'"msg":"placeholder"}', b'"text":"loading..."}')
    broken.write_bytes(data)
    proc = diff(str(pair[0]), str(broken))
    assert proc.returncode == 1, proc.stderr
    text = proc.stdout.decode()
    assert "B: ← (not JSON)\n" in text and "(response)" not in text
    for layer in text.split("\n" + "findings:")[1:2]:
        headings = [line.strip() for line in layer.splitlines() if line.startswith("  ") and
                    not line.startswith("    ")]  # fmt: skip
        assert len(headings) == len(set(headings)) >= 2, headings


def test_a_difference_names_the_frames_where_the_two_part_and_a_timing_its_ratio(pair, tmp_path):
    """Not the turn's first frame: the chunk whose text changed, the update whose status
    did, on both sides; a timing says how many times slower, and names the frames that end
    the turn."""
    a, b = pair

    def seqs(path: Path, variant: str, keep: Callable[[dict[str, Any]], bool]) -> list[int]:
        records = [orjson.loads(line) for line in path.read_bytes().splitlines()]
        return [r["seq"] for r in updates(records, variant) if keep(r["msg"]["params"]["update"])]

    def found(changed: Path, what: str) -> dict[str, Any]:
        (here,) = [d for d in as_json(a, changed)["differences"] if d["what"] == what]
        return here

    text = edited(b, tmp_path / "text.jsonl", different_text)
    changed = found(text, "agent text")
    fourth = [seqs(p, "agent_message_chunk", lambda u: True)[3] for p in (a, text)]
    assert [changed["a_seq"], changed["b_seq"]] == fourth
    assert fourth[0] > 5 + 3  # (past the prompt's seq, where it was said to differ)

    status = edited(b, tmp_path / "status.jsonl", changed_tool_status)
    changed = found(status, "tool call 1 status")
    [done] = seqs(a, "tool_call_update", lambda u: u.get("status") == "completed")
    [failed] = seqs(status, "tool_call_update", lambda u: u.get("status") == "failed")
    assert [changed["a_seq"], changed["b_seq"]] == [done, failed]
    assert changed["a"][-1] == "completed" and changed["b"][-1] == "failed"

    slow = edited(b, tmp_path / "slow.jsonl", three_times_slower)
    took = found(slow, "turn duration (s)")
    # of the figures before they are rounded to the ms shown: within what the rounding allows
    low = (took["b"] - 0.0005) / (took["a"] + 0.0005) - 0.005
    high = (took["b"] + 0.0005) / max(took["a"] - 0.0005, 1e-9) + 0.005
    assert low <= took["ratio"] <= high and took["ratio"] > 2, took
    idle = [seqs(p, "state_update", lambda u: u.get("state") == "idle")[-1] for p in (a, slow)]
    assert [took["a_seq"], took["b_seq"]] == idle
    timing = [d for d in as_json(a, slow)["differences"] if d["layer"] == "timing"]
    assert all(d["a_seq"] and d["b_seq"] for d in timing)  # (a median: the response that took it)
    said = diff("--only", "timing", str(a), str(slow)).stdout.decode()
    factor = f"{took['ratio']:.1f}" if took["ratio"] < 100 else f"{took['ratio']:.0f}"  # 127x
    assert f"(A:{idle[0]} B:{idle[1]})" in said and f"(B {factor}x slower)" in said


def test_a_timing_far_faster_has_its_ratio_from_the_unrounded_figures():
    """The shipped pair: B's prompt latency rounds to 0.001 s against A's 0.649. The ratio
    is B's over A's unrounded (never 0.0, never a division by zero) and said as a factor."""
    from tests.conftest import RECORDINGS

    a, b = RECORDINGS / "v1.jsonl", RECORDINGS / "clean.jsonl"
    timing = [d for d in as_json(a, b, "--only", "timing")["differences"]]
    assert timing, "the shipped pair differs in timing"
    for item in timing:
        ratio = item["ratio"]
        assert ratio is not None and ratio > 0, item
        # B's figure, rounded to 3 places, is A's times the ratio within that rounding
        assert abs(item["a"] * ratio - item["b"]) <= 0.0005 + 0.0005 * ratio, item
    for options in ((), ("--only", "timing")):
        proc = diff(*options, str(a), str(b))
        said = proc.stdout.decode()
        assert proc.returncode == 1 and b"Traceback" not in proc.stderr, proc.stderr
        slowest = min(timing, key=lambda item: item["ratio"])
        assert f"(B {1 / slowest['ratio']:.0f}x faster)" in said, said


def test_an_error_response_without_a_code_is_said_so(tmp_path):
    """Not `(None)`: the wire layer names an error response without its code as such."""
    from tests.conftest import RECORDINGS
    from tests.readers.test_readers import _odd_recording

    odd = _odd_recording(tmp_path / "odd.jsonl")
    said = diff("--only", "wire", str(RECORDINGS / "clean.jsonl"), str(odd)).stdout.decode()
    assert "error responses to session/prompt (no code)" in said and "None" not in said, said


@given(
    a=st.lists(st.sampled_from("abc"), max_size=14),
    b=st.lists(st.sampled_from("abc"), max_size=14),
)
@settings(max_examples=300, deadline=None)
def test_long_turns_are_aligned_by_a_shortest_edit_script(a, b):
    """Past the frames aligned by SequenceMatcher, turns are aligned by Myers's diff: the
    fewest insertions and deletions (its time grows with the differences, so two long turns
    of alternating thought and message chunks, all but their ends alike, take linear time:
    an LCS of them took 10.8 s for 32,000); the opcodes rebuild ``b`` from ``a``."""
    from acp_proxy.readers.diff import _edits

    opcodes = _edits(a, b, 1 << 20)
    assert opcodes is not None
    rebuilt, at = [], 0
    for tag, i1, i2, j1, j2 in opcodes:
        assert (tag == "delete") == (j1 == j2) and (tag == "insert") == (i1 == i2) and at <= i1
        rebuilt += a[at:i1] + b[j1:j2]
        at = i2
    assert rebuilt + a[at:] == b

    @functools.cache
    def common(i: int, j: int) -> int:  # the longest common subsequence of a[i:], b[j:]
        if i == len(a) or j == len(b):
            return 0
        if a[i] == b[j]:
            return 1 + common(i + 1, j + 1)
        return max(common(i + 1, j), common(i, j + 1))

    edits = sum((i2 - i1) + (j2 - j1) for _, i1, i2, j1, j2 in opcodes)
    assert edits == len(a) + len(b) - 2 * common(0, 0)


def test_two_long_turns_too_different_to_align_in_linear_time_differ_as_one_change():
    from acp_proxy.readers.diff import _opcodes

    a, b = ["t", "m"] * 3000, ["x", "y"] * 3000
    assert _opcodes(a, b) == [("replace", 0, 6000, 0, 6000)]
    assert _opcodes(a, a[1:-1]) == [("delete", 0, 1, 0, 0), ("delete", 5999, 6000, 5998, 5998)]


def test_the_text_names_frames_and_says_none_where_a_side_has_none(tmp_path):
    """A wire difference in text: each side's frames by name, joined (not a JSON list), and
    ``(none)`` for the side that has none (never JSON's ``null``); a long list is cut with
    where to see it whole."""
    a = streamed(tmp_path / "a.jsonl", 200)
    b = streamed(tmp_path / "b.jsonl", 200, insert_at=100)
    text = diff("--only", "wire", str(a), str(b)).stdout.decode()
    assert "frames only in B" in text and "null" not in text, text
    assert "A: (none)   B: ← session/update session_info_update\n" in text, text
    assert "   B: (none)\n" in diff("--only", "wire", str(b), str(a)).stdout.decode()

    def many(records):
        chunk = updates(records, "agent_message_chunk")[2]
        for n in range(40):
            extra = orjson.loads(orjson.dumps(chunk))
            extra["msg"]["params"]["update"] = {"sessionUpdate": f"x_{n}_update"}
            records.insert(records.index(chunk), extra)

    long = diff("--only", "wire", str(a), str(edited(a, tmp_path / "c.jsonl", many)))
    shown = next(line for line in long.stdout.decode().splitlines() if "B: " in line)
    assert shown.endswith("… (--format json has them all)") and len(shown) < 360, shown
