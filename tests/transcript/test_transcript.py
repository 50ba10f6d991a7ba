"""The transcript format: records written, and read back into the same frames."""

from __future__ import annotations

import io

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.core.framing import Framer, parse_frame
from acp_proxy.transcript.heads import PlainHeads, plain_frame_head
from acp_proxy.transcript.reading import iter_records
from acp_proxy.transcript.records import (
    EndRecord,
    FrameRecord,
    StartRecord,
    UnreadableLine,
    ViolationRecord,
    end_record,
    frame_record,
    frame_stamp,
    parse_record,
    plain_frame_record,
    start_record,
    violation_record,
)
from tests.conftest import RECORDINGS

T = "2026-11-29T20:17:00.123456Z"


def read(data: bytes) -> list:
    return list(iter_records(io.BytesIO(data)))


def test_frame_record_splices_the_bytes_as_the_last_key():
    """`msg` holds the frame's own bytes, after every other key."""
    raw = b'{"b":1,  "a":"\\u00e9"}'
    line = frame_record(3, T, "agent", parse_frame(raw))
    assert (
        line
        == b'{"kind":"frame","seq":3,"t":"' + T.encode() + b'","from":"agent","msg":' + raw + b"}\n"
    )


def test_violations_go_before_msg():
    """Findings on a frame are stored in `violations`, placed before `msg`."""
    finding = {"rule": "r", "level": "error", "message": "m", "spec": "s"}
    line = frame_record(1, T, "client", parse_frame(b"{}"), [finding])
    record = orjson.loads(line)
    assert list(record) == ["kind", "seq", "t", "from", "violations", "msg"]
    assert record["violations"] == [finding]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200).filter(lambda b: b"\n" not in b))
def test_any_frame_round_trips_exactly(raw):
    """Whatever the bytes, the reader recovers exactly the frame that was written."""
    line = frame_record(
        1,
        T,
        "client",
        parse_frame(raw),
        [{"rule": "x", "level": "warning", "message": '"msg": }', "spec": "s"}],
    )
    (record,) = read(line)
    assert isinstance(record, FrameRecord)
    assert record.frame.raw == raw
    assert record.frame.is_json == parse_frame(raw).is_json


@settings(max_examples=200, deadline=None)
@given(
    st.recursive(
        st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
        lambda children: (
            st.lists(children, max_size=4)
            | st.dictionaries(st.sampled_from(["msg", "a", '"', "\\"]), children, max_size=4)
        ),
        max_leaves=12,
    )
)
def test_json_frames_round_trip_with_their_value(value):
    """A JSON frame reads back with its exact bytes and its parsed value."""
    raw = orjson.dumps(value)
    (record,) = read(frame_record(9, T, "agent", parse_frame(raw)))
    assert record.frame.raw == raw
    assert record.frame.value == value


def test_all_record_kinds_read_back():
    """start, frame, violation and end records read back as their types."""
    data = b"".join(
        [
            start_record(T, ["agent", "--acp"], 42),
            frame_record(1, T, "client", parse_frame(b"not json")),
            frame_record(2, T, "agent", parse_frame(b"\xff")),
            violation_record(
                T, None, {"rule": "r", "level": "warning", "message": "m", "spec": "s"}
            ),
            b'{"kind":"future-kind","x":1}\n',
            end_record(T, -9, "client closed stdin"),
        ]
    )
    start, text, binary, finding, end = read(data)
    assert isinstance(start, StartRecord) and start.argv == ["agent", "--acp"] and start.pid == 42
    assert isinstance(text, FrameRecord) and text.frame.raw == b"not json"
    assert isinstance(binary, FrameRecord) and binary.frame.raw == b"\xff"
    assert isinstance(finding, ViolationRecord) and finding.seq is None
    assert isinstance(end, EndRecord) and end.exit == -9


def test_a_truncated_last_line_is_reported_not_fatal():
    """A crash can leave half a line: the reader reports it and keeps what came before."""
    good = frame_record(1, T, "client", parse_frame(b'{"a":1}'))
    records = read(good + good[:20])
    assert isinstance(records[0], FrameRecord)
    assert isinstance(records[1], UnreadableLine) and records[1].line == 2


def test_msg_is_found_by_the_fast_path_and_the_full_scan_alike():
    """However the record's keys are laid out, the reader finds the top-level msg."""
    from acp_proxy.transcript.records import _msg_value_offset, _scan_msg_value_offset

    lines = [
        b'{"kind":"frame","seq":1,"t":"x","from":"agent","msg":{"a":1}}',
        b'{"kind":"frame","seq":1,"t":"x","from":"agent","violations":[{"message":"\\",\\"msg\\":"}],"msg":[1]}',
        b'{"kind":"frame","seq":1,"extra":{"msg":2},"from":"agent","msg":3}',
        b'{"kind":"frame", "seq":1, "from":"agent", "msg" : "spaced"}',
    ]
    for line in lines:
        assert _msg_value_offset(line) == _scan_msg_value_offset(line)
        (record,) = read(line + b"\n")
        assert record.frame.raw == line[_scan_msg_value_offset(line) : -1]


def _both_ways(number: int, line: bytes) -> tuple[FrameRecord | None, object]:
    from acp_proxy.transcript.records import _plain_frame, _record

    record = orjson.loads(line)
    return _plain_frame(number, line, record), _record(number, line, record.get("kind"), record)


def _same(short: FrameRecord, long: object) -> None:
    assert isinstance(long, FrameRecord)
    assert (short.line, short.seq, short.t, short.side, short.violations) == (
        long.line,
        long.seq,
        long.t,
        long.side,
        long.violations,
    )
    assert short.frame.raw == long.frame.raw
    assert short.frame.value == long.frame.value
    assert (short.frame.error, short.frame.terminated) == (long.frame.error, long.frame.terminated)


def test_the_short_way_reads_plain_frame_records_as_the_long_way_does():
    """Every frame record of the golden recordings: where the reader's short way answers,
    it says what the long way (every field checked) says."""

    answered = 0
    for path in sorted((RECORDINGS).glob("*.jsonl")):
        for number, line in enumerate(path.read_bytes().splitlines(keepends=True), 1):
            if b'"kind":"frame"' not in line:
                continue
            short, long = _both_ways(number, line)
            if short is not None:
                answered += 1
                _same(short, long)
    assert answered > 50


@settings(max_examples=200, deadline=None)
@given(
    raw=st.sampled_from([b"{}", b'{"a":"\\"msg\\":1"}', b'{"a":1}\r', b" [1, {}] ", b'"x"']),
    seq=st.integers(0, 2**40),
    side=st.sampled_from(["client", "agent"]),
    unterminated=st.booleans(),
    ending=st.sampled_from([b"", b"\n", b"\r\n", b"  \n"]),
)
def test_the_short_way_agrees_on_any_plain_frame(raw, seq, side, unterminated, ending):
    frame = parse_frame(raw, terminated=not unterminated)
    line = frame_record(seq, T, side, frame).rstrip(b"\n") + ending
    short, long = _both_ways(3, line)
    if unterminated:
        assert short is None  # not plain: the long way reads it
    else:
        assert short is not None
        _same(short, long)


@st.composite
def record_lines(draw: st.DrawFn) -> list[bytes]:
    """Lines of a recording, mostly plain frame records that follow one another (the next
    seq, the same time and side), some that do not, and some that only look alike."""
    lines: list[bytes] = []
    seq, t, side = draw(st.integers(0, 12)), "2026-11-30T00:00:00.000001Z", "agent"
    for _ in range(draw(st.integers(1, 14))):
        step = draw(st.sampled_from([1, 1, 1, 1, 2, 0, -1]))
        seq = max(0, seq + step)
        if draw(st.booleans()):
            t = draw(st.sampled_from(["2026-11-30T00:00:00.000002Z", "x", "", 'a"b', "\x01"]))
        if draw(st.booleans()):
            side = draw(st.sampled_from(["agent", "client"]))
        msg = draw(st.sampled_from([b'{"a":1}', b"[]", b'"s"', b"{", b""]))
        line = frame_record(seq, t, side, parse_frame(msg)).rstrip(b"\n")
        line = draw(
            st.sampled_from(
                [line] * 6
                + [line + b" ", line.replace(b'"seq":', b'"seq":0'), line.replace(b"}", b"]")]
                + [line.replace(b'"from":', b'"violations":[],"from":'), b"", b"{}"]
            )
        )
        lines.append(line)
    return lines


@settings(max_examples=200, deadline=None)
@given(record_lines())
def test_plain_heads_guess_the_next_head_and_say_what_plain_frame_head_says(lines):
    """PlainHeads guesses the next line's head from the last (a stream's records follow one
    another) and compares it whole: whatever the lines, it says what plain_frame_head says."""
    heads = PlainHeads()
    for line in lines:
        found = heads.read(line)
        assert found == plain_frame_head(line)
        # the guess it says (for a reader that compares many lines at once): the next seq
        expected = None
        if found is not None:
            seq, t, side, _ = found
            stamp = frame_stamp(t, side)
            expected = None if stamp is None else (seq + 1, t, side, stamp)
        assert heads.expected() == expected


def test_plain_heads_skip_the_lines_a_reader_took_as_guessed():
    """A reader that took lines as PlainHeads guessed them says how many (skip): the guess
    goes on from the last of them."""
    t = "2026-11-30T00:00:00.000001Z"
    stamp = frame_stamp(t, "agent")
    assert stamp is not None
    heads = PlainHeads()
    assert heads.read(plain_frame_record(7, stamp, b"{}")[:-1]) == (7, t, "agent", b"{}")
    heads.skip(0)
    assert heads.expected() == (8, t, "agent", stamp)
    heads.skip(3)  # 8, 9 and 10 taken
    assert heads.expected() == (11, t, "agent", stamp)
    assert heads.read(plain_frame_record(11, stamp, b"[]")[:-1]) == (11, t, "agent", b"[]")
    assert heads.expected() == (12, t, "agent", stamp)


def test_lines_are_read_across_blocks_whole_and_as_bytes():
    """iter_lines reads a file in 1 MiB blocks: lines that span blocks (one of 3 MiB), blank
    lines and a last line without its newline come out whole, as bytes."""
    from acp_proxy.transcript.reading import iter_lines

    lines = [b"a" * 1000, b"", b"b" * (3 << 20), *(b"c%d" % n for n in range(300_000)), b"end"]
    data = b"\n".join(lines)
    read = list(iter_lines(io.BytesIO(data)))
    assert read == lines
    assert {type(line) for line in read} == {bytes}
    assert list(iter_lines(io.BytesIO(data + b"\n"))) == lines


def test_a_long_record_is_read_without_parsing_it_whole(monkeypatch):
    """A frame record of 2 MiB, most of it one string, reads as it was written, and orjson
    never parses it whole (it would hold twice the string at its peak: loads_long)."""
    text = "lorem ipsum é😀 " * (1 << 17)
    message = {"jsonrpc": "2.0", "method": "_big", "params": {"text": text}}
    line = frame_record(4, T, "client", parse_frame(orjson.dumps(message))).rstrip(b"\n")
    seen: list[int] = []
    loads = orjson.loads

    def counting(data: bytes) -> object:
        seen.append(len(data))
        return loads(data)

    monkeypatch.setattr(orjson, "loads", counting)
    record = parse_record(1, line)
    assert isinstance(record, FrameRecord)
    assert (record.seq, record.side, record.frame.value) == (4, "client", message)
    assert seen and max(seen) < len(line) // 2


def test_every_frame_the_relay_reads_is_read_back_from_its_record():
    """A record is read with the relay's limits: a message as deep as orjson reads (its
    record one level deeper), one with a lone surrogate escape, and the beginning of a line
    past the cap with its size, each come back as the relay read them, findings and all."""
    deep = b"[" * 1024 + b"]" * 1024
    surrogate = b'{"jsonrpc":"2.0","method":"_x","params":{"t":"\\ud83d"}}'
    [cut] = Framer(cap=10).feed(surrogate + b"\n")
    finding = {"rule": "r", "level": "error", "message": "m", "spec": "s"}
    for frame in (parse_frame(deep), parse_frame(surrogate), cut, parse_frame(deep, False)):
        line = frame_record(7, "t", "agent", frame, [finding])
        record = parse_record(3, line)
        assert isinstance(record, FrameRecord), record
        assert (record.seq, record.side, record.violations) == (7, "agent", [finding])
        read, fields = record.frame, ("raw", "error", "terminated", "lone_surrogates", "oversized")
        assert [getattr(read, f) for f in fields] == [getattr(frame, f) for f in fields]
        if frame.raw is not deep:  # (a value that deep is more than Python compares)
            assert read.value == frame.value
    assert cut.oversized == len(surrogate) and cut.raw == surrogate[:10]
    # a line that only looks like such a record is still unreadable, and says why
    for line in (b'{"kind":"frame","seq":1,"from":"agent","msg":' + b"[" * 1030 + b"}",
                 b'{"kind":"stderr","msg":' + deep + b"}",
                 b'{"kind":"frame","seq":"x","from":"agent","msg":' + deep + b"}"):  # fmt: skip
        assert isinstance(parse_record(1, line), UnreadableLine), line


def test_a_command_line_that_is_not_utf8_is_recorded_escaped():
    """An agent's argument that is not UTF-8 (``os.fsdecode(b"\\xff")``: a lone surrogate
    to Python) is written as ``\\xff``, never a failure to record the session."""
    import os

    record = parse_record(1, start_record(T, ["agent", os.fsdecode(b"caf\xe9"), "é"], 42))
    assert isinstance(record, StartRecord) and record.argv == ["agent", "caf\\xe9", "é"]


def test_a_line_that_is_no_json_says_why_in_words():
    """Why a record is unreadable, as a person reads it: cut short, not UTF-8, not JSON from
    a byte; never the parser's own words (``line 1 column 2 (char 1)``)."""
    for line, why in (
        (b'{"kind":"frame","seq":1', "cut short, its end missing"),
        (b"\xff\xfe{}", "not UTF-8 text (byte 1)"),
        (b"{x}", "not JSON from byte 2"),
    ):
        record = parse_record(7, line)
        assert isinstance(record, UnreadableLine) and record.line == 7
        assert record.reason == f"not a JSON record: {why}", record.reason
        assert "column" not in record.reason and "char" not in record.reason


def test_a_directory_named_as_a_recording_is_refused_and_leaves_no_file_open(tmp_path):
    import os

    import pytest

    from acp_proxy.transcript.reading import RecordingError, open_lines

    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        with pytest.raises(RecordingError, match="Is a directory"):
            open_lines(str(tmp_path))
    assert len(os.listdir("/proc/self/fd")) == before
