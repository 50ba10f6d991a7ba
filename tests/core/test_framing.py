"""The framer: bytes in, frames out, nothing lost."""

from __future__ import annotations

import itertools

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from acp_proxy.core.framing import UNPARSED, Framer, LineSplicer, parse_frame, value_spans


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


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.text(alphabet='ab"\\ \n{}[],:é'),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(alphabet='k"\\,:', max_size=4), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(value=_JSON, indent=st.booleans())
def test_value_spans_find_every_value_exactly(value, indent):
    """Each span value_spans reports holds exactly the JSON of the value at its path,
    escaped quotes and backslash runs included: what replay and redact splice into."""
    raw = orjson.dumps(value, option=orjson.OPT_INDENT_2 if indent else 0)
    spans = dict(value_spans(raw))
    assert spans[()] == (0, len(raw))
    for path, (start, end) in spans.items():
        expected = value
        for key in path:
            expected = expected[key]
        assert orjson.loads(raw[start:end]) == expected


#: Texts for long frames: escapes, multi-byte characters (a piece may end inside one),
#: a text that is what stands in for a long literal while the rest is parsed.
LONG_TEXTS = st.one_of(
    st.text(alphabet="ab é€😀", min_size=0, max_size=30),
    st.text(alphabet='ab"\\\n', min_size=0, max_size=12),
    st.sampled_from(["\x00acp-proxy:long:0", "\x00acp-proxy:long:1"]),
)
LONG_VALUES = st.recursive(
    st.one_of(
        LONG_TEXTS,
        st.integers(min_value=-(1 << 63), max_value=(1 << 64) - 1),
        st.floats(allow_nan=False, allow_infinity=False),
        st.booleans(),
        st.none(),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(LONG_TEXTS, inner, max_size=4)
    ),
    max_leaves=12,
)


def outcome(loads, raw: bytes) -> tuple[str, str]:
    """What parsing ``raw`` gives: the value (its repr tells 1 from 1.0 and True), or the
    error."""
    try:
        return "value", repr(loads(raw))
    except orjson.JSONDecodeError as exc:
        return "error", str(exc)


@settings(max_examples=400, deadline=None)
@given(
    value=LONG_VALUES,
    edits=st.lists(
        st.tuples(
            st.integers(min_value=0),
            st.sampled_from([b"", b"\x01", b"\x80", b"\xff", b"\xc3", b'"', b"\\", b"}", b" "]),
            st.booleans(),
        ),
        max_size=2,
    ),
)
@example(value="x" * 40, edits=[])
@example(value={"\x00acp-proxy:long:0": "x" * 40}, edits=[])  # a long key, a mark as key
@example(value=["é" * 20, "\x00acp-proxy:long:0"], edits=[])  # a mark in the text already
@example(value={"": "\x00acp-proxy:long:0", "aaa": ""}, edits=[])  # a key's mark, and a mark
def test_a_long_frame_parses_to_what_orjson_parses(value, edits):
    """loads_long (a long frame's long literals checked in pieces and made from their bytes)
    gives orjson's value, or orjson's error, for any text: JSON, corrupted JSON (a control
    byte, invalid UTF-8, a stray quote or backslash), marks that are keys or already there.
    Every frame and literal counts as long here, and pieces are a few bytes."""
    from acp_proxy.core import framing

    raw = bytearray(orjson.dumps(value))
    for position, byte, replace in edits:
        at = position % (len(raw) + 1)
        raw[at : at + replace] = byte
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(framing, "LONG_STRING", 3)
        patch.setattr(framing, "_PIECE", 5)
        assert outcome(framing.loads_long, bytes(raw)) == outcome(orjson.loads, bytes(raw))


def test_a_long_frame_is_never_parsed_whole(monkeypatch):
    """A frame of 2 MiB, most of it one string: orjson never sees it whole (it would hold
    twice the string at its peak); its value and bytes are the frame's."""
    from acp_proxy.core import framing

    seen: list[int] = []
    loads = orjson.loads

    def counting(data: bytes) -> object:
        seen.append(len(data))
        return loads(data)

    text = "lorem ipsum é😀 " * (1 << 17)
    raw = orjson.dumps({"jsonrpc": "2.0", "method": "_big", "params": {"text": text, "n": 1}})
    assert len(raw) > framing.LONG_FRAME
    monkeypatch.setattr(orjson, "loads", counting)
    frame = parse_frame(raw)
    assert frame.value == {"jsonrpc": "2.0", "method": "_big", "params": {"text": text, "n": 1}}
    assert frame.raw is raw and frame.error is None
    assert seen and max(seen) <= framing._PIECE + 2  # a piece and its quotes


def test_a_long_literal_python_cannot_decode_is_parsed_whole(monkeypatch):
    """Were orjson to pass a long literal that Python's UTF-8 decoder refuses, the frame
    is parsed whole (orjson's value or error), never a UnicodeDecodeError: the observer
    and the readers must not fail on a frame."""
    from acp_proxy.core import framing

    monkeypatch.setattr(framing, "_is_string_body", lambda body: True)
    raw = b'{"a":"' + b"x" * framing.LONG_STRING + b'\xff"}'
    frame = parse_frame(raw + b" " * framing.LONG_FRAME)
    assert frame.value is UNPARSED and frame.error is not None
