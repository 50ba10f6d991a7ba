"""The framer: bytes in, frames out, nothing lost."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.core.framing import UNPARSED, Framer, LineSplicer, parse_frame


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
