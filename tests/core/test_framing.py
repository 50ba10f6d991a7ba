"""The framer: bytes in, frames out, nothing lost."""

from __future__ import annotations

import itertools
import json

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.core.framing import (
    UNPARSED,
    Frame,
    Framer,
    LineEnd,
    LinePiece,
    LineSplicer,
    parse_frame,
)


def frames_of(chunks: list[bytes]) -> list[bytes]:
    framer = Framer()
    raws = [f.raw for chunk in chunks for f in framer.feed(chunk)]
    return raws + [f.raw for f in framer.feed(b"")]


def cut(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400), st.lists(st.integers(min_value=0), max_size=20))
def test_frames_joined_give_the_stream_back(data, cuts):
    """For any byte stream cut into any chunks, the frames joined with \\n are the stream."""
    raws = frames_of(cut(data, cuts))
    joined = b"\n".join(raws)
    if data.endswith(b"\n"):
        joined += b"\n"
    assert joined == data


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from([b'{"a":1}', b"", b"x\r", b"\xff", b"[1,2]", b" 3 "]), max_size=12))
def test_whole_and_byte_at_a_time_give_the_same_frames(lines):
    """Feeding a stream whole or one byte at a time yields the same frames."""
    data = b"".join(line + b"\n" for line in lines)
    framer = Framer()
    whole = framer.feed(data) + framer.feed(b"")
    framer = Framer()
    single = [f for i in range(len(data)) for f in framer.feed(data[i : i + 1])] + framer.feed(b"")
    assert whole == single
    assert [f.raw for f in whole] == lines


def test_last_line_without_newline_is_a_frame_at_eof():
    """A last line with no newline comes out, unterminated, at end of stream."""
    framer = Framer()
    assert framer.feed(b'{"a":1}\n{"b"')[0].raw == b'{"a":1}'
    assert framer.buffered == 4
    (last,) = framer.feed(b":2}") + framer.feed(b"")
    assert last.raw == b'{"b":2}' and last.value == {"b": 2} and not last.terminated


def test_crlf_keeps_the_carriage_return():
    """The \\r of a \\r\\n line belongs to the frame."""
    (frame,) = Framer().feed(b'{"a":1}\r\n')
    assert frame.raw == b'{"a":1}\r'
    assert frame.value == {"a": 1}


def test_non_json_and_non_utf8_frames_are_kept():
    """Frames that are not JSON keep their bytes and say why they did not parse."""
    text, binary, empty = Framer().feed(b"hello\n\xff\xfe\n\n")
    assert text.raw == b"hello" and text.value is UNPARSED and text.error and text.utf8
    assert binary.raw == b"\xff\xfe" and not binary.utf8 and not binary.is_json
    assert empty.raw == b"" and not empty.is_json


def test_parse_frame_accepts_any_json_value():
    """A frame is JSON if orjson accepts it, whatever the value."""
    assert parse_frame(b"123").value == 123
    assert parse_frame(b'"s"').value == "s"
    assert parse_frame(b"NaN").value is UNPARSED


def test_feed_after_eof_is_refused():
    """The stream cannot go on after it ended."""
    framer = Framer()
    framer.feed(b"")
    assert framer.feed(b"") == []
    try:
        framer.feed(b"x")
    except RuntimeError:
        pass
    else:
        raise AssertionError("feed after EOF accepted")


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"") + b"\n"), max_size=6),
    tail=st.binary(max_size=8).map(lambda b: b.replace(b"\n", b"")),
    inserts=st.lists(st.integers(0, 80), max_size=4),
)
def test_spliced_lines_land_only_between_lines_fed_one_byte_at_a_time(lines, tail, inserts):
    """Notices go in where a line begins, never inside one, whatever the chunking."""
    stream = b"".join(lines) + tail
    splicer = LineSplicer()
    out = bytearray()
    added = []
    for position in range(len(stream) + 1):
        for n, at in enumerate(inserts):
            if at == position:
                notice = b'{"notice":%d}\n' % n
                added.append(notice)
                out += splicer.insert(notice)
        if position < len(stream):
            for piece in splicer.feed(stream[position : position + 1]):
                out += piece
    result = bytes(out)
    written = [n for n in added if n in result]
    without = result
    for notice in written:
        start = result.index(notice)
        assert start == 0 or result[start - 1] == 0x0A  # only where a line begins
        without = without.replace(notice, b"", 1)
    assert without == stream  # the stream's own bytes, all, in order
    if len(written) < len(added):  # still waiting: only for a line that has not ended
        assert stream and not stream.endswith(b"\n")


def test_splicer_writes_at_once_between_lines_and_waits_inside_one():
    splicer = LineSplicer()
    assert splicer.insert(b"N\n") == b"N\n"  # nothing written yet: between lines
    assert splicer.feed(b"ab") == [b"ab"]
    assert splicer.insert(b"M\n") == b""  # inside a line: wait
    assert splicer.feed(b"c") == [b"c"]
    assert splicer.feed(b"d\nef") == [b"d\n", b"M\n", b"ef"]
    assert splicer.feed(b"\n") == [b"\n"]
    assert splicer.insert(b"O\n") == b"O\n"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.binary(max_size=40), max_size=8),
    st.lists(st.integers(min_value=0), max_size=20),
    st.integers(min_value=1, max_value=24),
)
def test_a_capped_framer_holds_at_most_the_cap_and_says_each_line_s_size(lines, cuts, cap):
    """With a cap, each line comes out whole when it is no longer than the cap, else as
    its first ``cap`` bytes, unparsed, with its size; in order, however the stream is cut,
    and never more than ``cap`` bytes of a line are held."""
    lines = [line.replace(b"\n", b" ") for line in lines]
    data = b"".join(line + b"\n" for line in lines[:-1]) + (lines[-1] if lines else b"")
    framer = Framer(cap)
    frames: list[Frame] = []
    for chunk in cut(data, cuts):
        frames += framer.feed(chunk)
        assert framer.buffered <= cap
    frames += framer.feed(b"")
    last = [lines[-1]] if lines and lines[-1] else []  # a last line without its \n
    expected = [*lines[:-1], *last]
    assert [f.raw for f in frames] == [line[:cap] for line in expected]
    assert [f.oversized for f in frames] == [len(x) if len(x) > cap else 0 for x in expected]
    assert [f.terminated for f in frames] == [True] * (len(lines) - 1) + [False] * len(last)
    for frame, line in zip(frames, expected, strict=True):
        assert frame.is_json == (len(line) <= cap and parse_frame(line).is_json)


def test_a_lone_surrogate_escape_parses_as_the_replacement_character():
    """RFC 8259's grammar allows "\\ud83d" alone (what JSON.stringify makes of a string
    cut mid-emoji); orjson refuses it. The frame is JSON, each lone half is U+FFFD, and it
    says so; a whole pair, or an escaped backslash before "ud83d", is as orjson reads it."""
    for raw, value in [
        (rb'"\ud83d"', "\ufffd"),
        (rb'"\uDE00"', "\ufffd"),
        (rb'{"\ud83d":["a\ud83d\ud83d\ude00"]}', {"\ufffd": ["a\ufffd\U0001f600"]}),
        (rb'"\\\ud83d"', "\\\ufffd"),
    ]:
        frame = parse_frame(raw)
        assert (frame.value, frame.error, frame.lone_surrogates) == (value, None, True), raw
        json.loads(raw)  # JSON to Python's parser too, which keeps the lone halves
    for raw in [rb'"\ud83d\ude00"', rb'"\\ud83d"', rb'"\u0041"']:
        assert parse_frame(raw).is_json and not parse_frame(raw).lone_surrogates
    for raw in [rb'"\ud83d', rb'["\ud83d",]', rb"\ud83d"]:  # still not JSON
        assert parse_frame(raw).value is UNPARSED


@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.binary(max_size=40), max_size=8),
    st.lists(st.integers(min_value=0), max_size=20),
    st.integers(min_value=1, max_value=24),
)
def test_a_holding_framer_hands_out_a_long_line_in_order_and_holds_at_most_the_hold(
    lines, cuts, hold
):
    """With a hold, a line that lies in one chunk, or is held whole, comes out whole; one
    longer than the hold across chunks as pieces, in order, then its end with its size; never more than ``hold`` bytes of a line are held,
    and the lines, pieces joined, are the stream's, however it is cut."""
    lines = [line.replace(b"\n", b" ") for line in lines]
    data = b"".join(line + b"\n" for line in lines[:-1]) + (lines[-1] if lines else b"")
    framer = Framer(hold=hold)
    out: list[tuple[bytes, bool]] = []
    piece = bytearray()
    items = []
    for chunk in cut(data, cuts):
        items += framer.parts(chunk)
        assert framer.buffered <= hold
    items += framer.parts(b"")
    for item in items:
        if isinstance(item, LinePiece):
            piece += item.data
        elif isinstance(item, LineEnd):
            whole = bytes(piece) + item.tail
            assert len(whole) == item.size > hold
            out.append((whole, item.terminated))
            piece.clear()
        else:
            raw = item.raw if isinstance(item, Frame) else bytes(item)  # (whole in a chunk)
            out.append((raw, not isinstance(item, Frame) or item.terminated))
    last = [lines[-1]] if lines and lines[-1] else []
    expected = [*lines[:-1], *last]
    assert [raw for raw, _ in out] == expected
    assert [ended for _, ended in out] == [True] * (len(lines) - 1) + [False] * len(last)
