"""The observer: one sequence for the connection, and it never takes the relay down."""

from __future__ import annotations

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from structlog.testing import capture_logs

from acp_proxy.core.framing import Framer
from acp_proxy.core.protocol import Side
from acp_proxy.core.validator import Validator
from acp_proxy.live.addons import run_addons
from acp_proxy.live.observer import Observer
from acp_proxy.live.recorder import Recorder
from acp_proxy.log import get_logger
from tests.exchanges import chunk_frames


def frames(*messages):
    framer = Framer()
    return framer.feed(b"".join(orjson.dumps(m) + b"\n" for m in messages))


def test_one_sequence_for_both_directions(tmp_path):
    """seq counts frames of both directions together, from 1."""
    recorder = Recorder(tmp_path / "t.jsonl", get_logger(), ["agent"], 1)
    observer = Observer(recorder, get_logger(), Validator())
    observer.observe(
        Side.CLIENT, frames({"jsonrpc": "2.0", "method": "_a"}, {"jsonrpc": "2.0", "method": "_b"})
    )
    observer.observe(Side.AGENT, frames({"jsonrpc": "2.0", "method": "_c"}))
    observer.finish(0, "done")
    records = [orjson.loads(line) for line in (tmp_path / "t.jsonl").read_bytes().split(b"\n")[:-1]]
    assert [(r.get("seq"), r.get("from")) for r in records[1:-1]] == [
        (1, "client"),
        (2, "client"),
        (3, "agent"),
    ]


def test_a_failing_observation_is_logged_once_and_never_raised(tmp_path):
    """Observation never hurts the relay: a failure below is logged once, then observing stops."""

    def explode(*pieces: bytes) -> None:
        raise RuntimeError("boom")

    recorder = Recorder(tmp_path / "t.jsonl", get_logger(), ["agent"], 1)
    recorder.write = explode  # type: ignore[method-assign]
    observer = Observer(recorder, get_logger(), Validator())
    with capture_logs() as logs:
        assert observer.observe(Side.CLIENT, frames({"jsonrpc": "2.0", "method": "_a"})) == b""
        assert observer.observe(Side.CLIENT, frames({"jsonrpc": "2.0", "method": "_b"})) == b""
        assert observer.finish(0, "done") == []  # finishing does not raise either
    failures = [entry for entry in logs if entry["log_level"] == "error"]
    assert len(failures) == 2 and "boom" in failures[0]["error"]
    assert failures[1]["event"] == "could not finish the transcript"


def test_a_failing_validator_is_logged_once_and_the_frame_still_recorded(tmp_path):
    """If the validator itself fails, validation stops; recording goes on."""

    class Broken(Validator):
        def check(self, message):
            raise ValueError("bug")

    path = tmp_path / "t.jsonl"
    recorder = Recorder(path, get_logger(), ["agent"], 1)
    observer = Observer(recorder, get_logger(), Broken())
    with capture_logs() as logs:
        observer.observe(
            Side.CLIENT,
            frames({"jsonrpc": "2.0", "method": "_a"}, {"jsonrpc": "2.0", "method": "_b"}),
        )
    assert sum(1 for entry in logs if entry["log_level"] == "error") == 1
    assert path.read_bytes().count(b'"kind":"frame"') == 2


def test_a_failing_wire_model_stops_validation_but_not_recording(tmp_path):
    """A bug in the wire model costs validation, logged once; every frame is still recorded."""
    path = tmp_path / "t.jsonl"
    recorder = Recorder(path, get_logger(), ["agent"], 1)
    observer = Observer(recorder, get_logger(), Validator())

    def explode(*args: object) -> None:
        raise RuntimeError("wire bug")

    observer.wire.feed = explode  # type: ignore[method-assign, assignment]
    with capture_logs() as logs:
        observer.observe(
            Side.CLIENT,
            frames({"jsonrpc": "2.0", "method": "_a"}, {"jsonrpc": "2.0", "method": "_b"}),
        )
    assert sum(1 for entry in logs if entry["log_level"] == "error") == 1
    assert path.read_bytes().count(b'"kind":"frame"') == 2


def test_every_record_is_what_frame_record_writes(tmp_path):
    """The short way for plain frames writes, byte for byte, the record frame_record makes;
    frames with findings, not JSON, unfinished or big take the long way, same format."""
    from acp_proxy.core.framing import parse_frame
    from acp_proxy.transcript.reading import read_records
    from acp_proxy.transcript.records import FrameRecord, frame_record

    recorder = Recorder(tmp_path / "t.jsonl", get_logger(), ["agent"], 1)
    observer = Observer(recorder, get_logger(), Validator())
    # Not at debug level (where every frame takes the long way, to be logged), as under `run`.
    observer._debug = False
    chunk = [
        parse_frame(b'{"jsonrpc":"2.0","method":"_plain","params":{"a":[1, 2]}}'),
        parse_frame(b"not json"),
        parse_frame(b'{"jsonrpc":"1.0","method":"_finding"}'),
        parse_frame(b'{"jsonrpc":"2.0","method":"_big","params":{"x":"' + b"x" * 70_000 + b'"}}'),
        parse_frame(b'{"jsonrpc":"2.0","method":"_last"}', terminated=False),
    ]
    observer.observe(Side.CLIENT, chunk)
    observer.finish(0, "done")
    lines = (tmp_path / "t.jsonl").read_bytes().split(b"\n")[1:6]
    records = [r for r in read_records(tmp_path / "t.jsonl") if isinstance(r, FrameRecord)]
    for line, record, frame in zip(lines, records, chunk, strict=True):
        assert record.frame == frame
        expected = frame_record(record.seq, record.t, "client", frame, record.violations)
        assert line + b"\n" == expected
    assert [bool(r.violations) for r in records] == [False, True, True, False, False]


def test_frames_read_before_a_failing_one_are_still_recorded(tmp_path, monkeypatch):
    """Plain records of a read are gathered and written together; if observing a later frame
    of the same read fails (a bug), the ones before it still reach the transcript."""
    import acp_proxy.live.observer

    recorder = Recorder(tmp_path / "t.jsonl", get_logger(), ["agent"], 1)
    observer = Observer(recorder, get_logger(), Validator())
    observer._debug = False  # as under `run` at its default log level: the plain records' way
    from acp_proxy.transcript.records import plain_frame_record as real

    def fails_on_b(seq: int, stamp: bytes, raw: bytes) -> bytes:
        if b"_b" in raw:
            raise RuntimeError("a bug")
        return real(seq, stamp, raw)

    monkeypatch.setattr(acp_proxy.live.observer, "plain_frame_record", fails_on_b)
    chunk = Framer().feed(b'{"jsonrpc":"2.0","method":"_a"}\n{"jsonrpc":"2.0","method":"_b"}\n')
    with capture_logs():
        assert observer.observe(Side.CLIENT, chunk) == b""
    observer.finish(0, "done")
    records = [orjson.loads(line) for line in (tmp_path / "t.jsonl").read_bytes().split(b"\n")[:-1]]
    assert [r["msg"]["method"] for r in records if r["kind"] == "frame"] == ["_a"]


def test_not_recording_findings_and_notices_are_still_logged():
    """With --no-record at the default log level, a frame with nothing to log is passed over
    at once; one with a finding, or a notice, is still logged, with its seq."""
    observer = Observer(Recorder(None, get_logger()), get_logger(), Validator())
    observer._debug = False  # as under `run` at its default log level
    notice = {"sessionUpdate": "notice", "severity": "info", "title": "hello"}
    chunk = frames(
        {"jsonrpc": "2.0", "method": "_plain"},
        {"jsonrpc": "1.0", "method": "_finding"},
        {
            "jsonrpc": "2.0",
            "method": "session/update",
            "params": {"sessionId": "s", "update": notice},
        },
        {"jsonrpc": "2.0", "method": "_plain_again"},
    )
    with capture_logs() as logs:
        observer.observe(Side.AGENT, chunk)
    assert [(entry["event"], entry.get("seq")) for entry in logs if entry["event"] == "notice"] == [
        ("notice", 3)
    ]
    assert [entry["seq"] for entry in logs if entry.get("rule") == "jsonrpc-version"] == [2]
    assert observer.seq == 4


def _observed(tmp_path, reads, how, raw, monkeypatch):
    """The transcript and the logs (debug included) of an observer fed ``reads`` (side,
    bytes), each read's frames parsed by the framer, or handed over as their lines' bytes
    (``raw``); ``how``: recording, logging frames (debug), redacting."""
    import logging

    import structlog

    import acp_proxy.live.observer
    from acp_proxy.transcript.redact import Redactor

    record, debug, redact = how
    monkeypatch.setattr(
        acp_proxy.live.observer, "format_time", lambda: "2026-11-30T00:00:00.000000Z"
    )
    path = tmp_path / f"{how}-{raw}.jsonl"
    capture = structlog.testing.LogCapture()
    log = structlog.wrap_logger(
        None,
        processors=[capture],
        wrapper_class=structlog.make_filtering_bound_logger(logging.DEBUG),
    )
    recorder = Recorder(path if record else None, log, ["agent"], 1)
    validator = Validator()
    redactor = Redactor() if redact else None
    chain = run_addons(recorder, log, validator, redactor=redactor)
    observer = Observer(recorder, log, validator, addons=chain)
    observer._debug = debug  # False: as under `run` at its default log level
    framers = {"client": Framer(), "agent": Framer()}
    for side, data in reads:
        framer = framers[side]
        observer.observe(side, framer.lines(data) if raw else framer.feed(data))
    observer.finish(0, "done")
    logs = [entry for entry in capture.entries if entry["event"] != "recording"]
    # the records between start and end (those two take their time from the recorder)
    return (path.read_bytes().split(b"\n")[1:-2] if record else []), logs


@settings(
    max_examples=60,
    deadline=None,
    # the same stand-in clock every example: the fixture's patch is what each one needs
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    st.sampled_from([1, 2]),
    st.lists(st.one_of(chunk_frames(), st.sampled_from(["cancel", "end"])), max_size=12),
    st.data(),
)
def test_frames_handed_over_unparsed_are_recorded_and_flagged_as_parsed_ones(
    tmp_path_factory, monkeypatch, version, chunks, data
):
    """The relay hands the observer its lines unparsed: a streamed chunk known by its bytes
    (Shortcut.repeat) is recorded without being parsed or checked again, any other is
    parsed there. The transcript and the logged findings are byte for byte what parsing
    every frame gives, however the stream is cut into reads; recording or not, logging every
    frame (debug) or redacting (those need every frame parsed)."""
    from tests.exchanges import (
        CLEAN_CHUNK,
        C,
        S,
        idle,
        note,
        ok,
        prompt,
        setup,
        state,
        user_message,
    )

    frames_: list = [*setup(version), prompt()]
    if version == 2:
        frames_ += [state("running"), user_message()]
    events = {
        "cancel": (C, note("session/cancel", {"sessionId": S})),
        "end": ("agent", ok(10, {"stopReason": "cancelled"})) if version == 1 else idle(),
    }
    for chunk in chunks:
        frames_.append(events[chunk] if isinstance(chunk, str) else ("agent", chunk))
    frames_ += [("agent", CLEAN_CHUNK)] * 4  # a run of chunks alike, whatever came before
    reads = []
    for side, message in frames_:
        line = (message if isinstance(message, bytes) else orjson.dumps(message)) + b"\n"
        cut = data.draw(st.integers(0, len(line)))  # a read may end inside a line
        reads += [(side, piece) for piece in (line[:cut], line[cut:]) if piece]
    tmp_path = tmp_path_factory.mktemp("t")
    for how in (
        (True, False, False),
        (False, False, False),
        (True, True, False),
        (True, False, True),
    ):
        parsed = _observed(tmp_path, reads, how, False, monkeypatch)
        unparsed = _observed(tmp_path, reads, how, True, monkeypatch)
        assert unparsed == parsed


def test_a_streamed_turn_is_recorded_without_parsing_its_chunks(tmp_path, monkeypatch):
    """The short way is taken live: of a turn's 200 chunks, only the first few are parsed."""
    import acp_proxy.live.observer
    from acp_proxy.core.framing import parse_frame
    from tests.exchanges import CLEAN_CHUNK, setup, turn

    parsed: list[bytes] = []

    def counting(raw: bytes) -> object:
        parsed.append(raw)
        return parse_frame(raw)

    monkeypatch.setattr(acp_proxy.live.observer, "parse_frame", counting)
    recorder = Recorder(tmp_path / "t.jsonl", get_logger(), ["agent"], 1)
    observer = Observer(recorder, get_logger(), Validator())
    observer._debug = False
    framer = Framer()
    for side, message in [*setup(2), *turn()[:4]]:
        observer.observe(Side(side), framer.lines(orjson.dumps(message) + b"\n"))
    chunks = [CLEAN_CHUNK.replace(b'"ab"', b'"word %d "' % n) + b"\n" for n in range(200)]
    with capture_logs() as logs:
        observer.observe(Side.AGENT, framer.lines(b"".join(chunks)))
    assert not [entry for entry in logs if entry.get("rule")]
    assert len([raw for raw in parsed if b"word" in raw]) < 5
    observer.finish(0, "done")
    lines = (tmp_path / "t.jsonl").read_bytes().split(b"\n")
    assert sum(1 for line in lines if b"word" in line) == 200
