"""JSON text read as bytes: the one string-end scanner, value spans, long frames parsed in
less memory, the one preview."""

from __future__ import annotations

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from acp_proxy.core.framing import UNPARSED, parse_frame
from acp_proxy.core.jsontext import preview, string_end, value_spans


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet='a"\\é\n', max_size=12), st.text(alphabet='a"\\,}', max_size=6))
def test_string_end_is_where_the_json_string_ends(text, after):
    """Whatever the text (quotes, runs of backslashes), the end string_end finds is just
    past the literal orjson writes for it, and what follows is left alone."""
    literal = orjson.dumps(text)
    raw = b"[" + literal + after.encode()
    assert string_end(raw, 1) == 1 + len(literal)


def test_a_string_that_does_not_end_says_so():
    assert string_end(b'{"a', 1) == -1
    assert string_end(b'"ab\\"', 0) == -1  # its only closing quote is escaped


def test_preview_quotes_json_and_cuts_it():
    assert preview("3") == '"3"' and preview(3) == "3"
    assert preview({"a": [1, None]}) == '{"a":[1,null]}'
    long = preview("x" * 200, 20)
    assert len(long) == 20 and long.endswith("...") and long.startswith('"xxx')
    assert preview(b"\xff") == "b'\\xff'"  # not JSON: its repr


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
    from acp_proxy.core import jsontext

    raw = bytearray(orjson.dumps(value))
    for position, byte, replace in edits:
        at = position % (len(raw) + 1)
        raw[at : at + replace] = byte
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(jsontext, "LONG_STRING", 3)
        patch.setattr(jsontext, "_PIECE", 5)
        assert outcome(jsontext.loads_long, bytes(raw)) == outcome(orjson.loads, bytes(raw))


def test_a_long_frame_is_never_parsed_whole(monkeypatch):
    """A frame of 2 MiB, most of it one string: orjson never sees it whole (it would hold
    twice the string at its peak); its value and bytes are the frame's."""
    from acp_proxy.core import jsontext

    seen: list[int] = []
    loads = orjson.loads

    def counting(data: bytes) -> object:
        seen.append(len(data))
        return loads(data)

    text = "lorem ipsum é😀 " * (1 << 17)
    raw = orjson.dumps({"jsonrpc": "2.0", "method": "_big", "params": {"text": text, "n": 1}})
    assert len(raw) > jsontext.LONG_FRAME
    monkeypatch.setattr(orjson, "loads", counting)
    frame = parse_frame(raw)
    assert frame.value == {"jsonrpc": "2.0", "method": "_big", "params": {"text": text, "n": 1}}
    assert frame.raw is raw and frame.error is None
    assert seen and max(seen) <= jsontext._PIECE + 2  # a piece and its quotes


def test_a_long_literal_python_cannot_decode_is_parsed_whole(monkeypatch):
    """Were orjson to pass a long literal that Python's UTF-8 decoder refuses, the frame
    is parsed whole (orjson's value or error), never a UnicodeDecodeError: the observer
    and the readers must not fail on a frame."""
    from acp_proxy.core import jsontext

    monkeypatch.setattr(jsontext, "_is_string_body", lambda body: True)
    raw = b'{"a":"' + b"x" * jsontext.LONG_STRING + b'\xff"}'
    frame = parse_frame(raw + b" " * jsontext.LONG_FRAME)
    assert frame.value is UNPARSED and frame.error is not None
