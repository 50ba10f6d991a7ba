"""The readers agree with the validator, checked once here (tests/core tests the core alone):
a recording validates offline exactly as live, ``validate``'s, ``show``'s, ``stats``'s,
the conversation's and the report's short ways (repeated chunks known by their bytes, in
runs or one by one) make what reading every record in full makes. Over every rule's example
in the catalog (the frames that break it), streams of chunks, and corrupted recordings."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from acp_proxy.core.chunks import is_text_chunk
from acp_proxy.core.framing import parse_frame
from acp_proxy.core.protocol import EntityType
from acp_proxy.core.rules import CATALOG
from acp_proxy.core.validator import Violation
from acp_proxy.readers.annotate import annotate, located, read
from acp_proxy.readers.conversation import Conversation
from acp_proxy.readers.report import document as report_document
from acp_proxy.readers.report import todays_findings
from acp_proxy.readers.stats import Stats
from acp_proxy.readers.summary import TimelineFilter, chunk_summary, frame_summary
from acp_proxy.readers.text import Timeline, conversation_lines
from acp_proxy.transcript.records import (
    FORMAT,
    FrameRecord,
    StartRecord,
    frame_record,
    parse_record,
    start_record,
)
from tests.exchanges import (
    CLEAN_CHUNK,
    T0,
    A,
    C,
    Frames,
    S,
    chunk_frames,
    findings,
    idle,
    note,
    ok,
    prompt,
    setup,
    state,
    turn,
    user_message,
)


def views(frames: Frames, live: list[Violation] | None) -> None:
    """An exchange goes through the readers: the recording
    validates offline exactly as live, and `show --conversation` and `stats` render it."""
    records: list[Any] = [StartRecord(1, T0, ["agent"], 1, FORMAT, "0")]
    for seq, (side, message) in enumerate(frames, start=1):
        raw = message if isinstance(message, bytes) else orjson.dumps(message)
        records.append(FrameRecord(seq + 1, seq, T0, side, parse_frame(raw)))
    annotated = list(annotate(records))
    offline = [f for item in annotated for f in item.findings]
    for item in annotated:  # a chunk's summary is its envelope's part, then its text's
        if item.message is not None and is_text_chunk(item.message):
            head, words = chunk_summary(item.message)
            assert (f"{head} {words!r}" if words else head) == frame_summary(item.message)
    if live is not None:
        assert offline == live
    # validate's short way, on the lines the recorder writes, finds the same
    lines = [start_record(T0, ["agent"], 1)]
    lines += [frame_record(r.seq, r.t, r.side, r.frame) for r in records[1:]]
    numbered = list(enumerate((line.rstrip(b"\n") for line in lines), 1))
    assert [f for _, f in located(read(numbered, run=256))] == offline
    # and show's short way shows the same timeline, recomputed or stored findings
    for stored in (True, False):
        long_way = timeline(annotate(records, stored=stored))
        for run in (1, 256):  # repeated chunks one by one, or together
            assert timeline(read(numbered, stored=stored, run=run)) == long_way
    stats = Stats()
    for item in annotated:
        stats.add(item)
    assert stats.lines() and stats.as_json()["frames"] == stats.frames
    assert list(conversation_lines(Conversation.per_connection(annotated)))
    readers_agree(records, numbered)


def readers_agree(records: list[Any], numbered: list[tuple[int, bytes]]) -> None:
    """stats, show --conversation and report read the lines the short way (read(),
    repeated chunks taken in runs or one by one) and make what reading every record makes
    (the report with its stored findings, and with today's)."""
    stats = Stats()
    for item in annotate(records):
        stats.add(item)
    conversation = seen(Conversation.per_connection(annotate(records, validate=False)))
    today = todays_findings(annotate(records))
    pages = [report_document("r", annotate(records, stored=True), now) for now in (None, today)]
    for run in (1, 2, 256):
        for now, page in zip((None, today), pages, strict=True):
            short_way = read(numbered, stored=True, run=run)
            assert report_document("r", short_way, now) == page
        short = Stats()
        short.feed(read(numbered, run=run))
        assert short.as_json() == stats.as_json()
        items = read(numbered, validate=False, run=run)
        assert seen(Conversation.per_connection(items)) == conversation


def seen(connections: list[Any]) -> tuple[dict[str, Any], list[Any]]:
    """A conversation's document, and the frames that addressed each entity."""
    seqs = [
        (key, entity.seqs)
        for _, model in connections
        for view in model.sessions.values()
        for key, entity in view.entities.items()
    ]
    return Conversation.document(connections), seqs


def timeline(items: Iterable[Any], only: TimelineFilter | None = None) -> list[str]:
    """The lines ``show`` prints for ``items`` (with colour: its styles are part of it)."""
    lines: list[str] = []
    Timeline(lines.append, only, color=True).feed(items)
    return lines


# --- every rule's example, and streams of chunks --------------------------------------------


@pytest.mark.parametrize("rule", [r for r in CATALOG if r.example is not None], ids=str)
def test_every_rules_example_reads_alike_in_every_reader(rule: Any) -> None:
    """The frames of each rule's example (the catalog's: they break it at their last) go
    through every reader: offline as live, the short ways as the long ones."""
    assert rule.example is not None
    frames: Frames = [(side, line.encode()) for side, line in rule.example]
    found = findings(frames)
    assert rule.id in [f.rule for f in found]
    views(frames, found)


@settings(max_examples=30, deadline=None)
@given(st.sampled_from([1, 2]), st.lists(chunk_frames(), min_size=1, max_size=12))
def test_streamed_chunks_read_alike_in_every_reader(version: int, chunks: list[bytes]) -> None:
    """A turn's streamed chunks, mostly of one shape, some another or broken: the readers
    find and show what the validator found live."""
    frames: Frames = [*setup(version), prompt()]
    if version == 2:
        frames += [state("running"), user_message()]
    frames += [(A, raw) for raw in chunks]
    views(frames, findings(frames))
    views([*setup(version), *turn()], findings([*setup(version), *turn()]))


# --- repeated chunk records: the short ways ---------------------------------------------------


#: What a corrupted (or hand-edited) recording may hold where a chunk's text was: bytes that
#: are no JSON string body, or a body that is not the text alone.
BROKEN_BODIES = st.sampled_from(
    [b"a\x01b", b"\\q", b"\xff\xfe", b'a"b', b"a\\", b"\\ud800", b'x","type":"image', b"\\u00e9"]
)


_CANCELLED_STREAM: list[bytes | str] = [
    *[CLEAN_CHUNK] * 3,
    "cancel",
    "end",
    *[CLEAN_CHUNK] * 3,
    "echo",
    "gap",
    *[CLEAN_CHUNK] * 3,
    "tick",
    *[CLEAN_CHUNK] * 2,
]


@settings(max_examples=80, deadline=None)
@example(1, _CANCELLED_STREAM)
@example(2, _CANCELLED_STREAM)
@given(
    st.sampled_from([1, 2]),
    st.lists(
        st.one_of(
            chunk_frames(), BROKEN_BODIES, st.sampled_from(["cancel", "end", "gap", "echo", "tick"])
        ),
        min_size=1,
        max_size=14,
    ),
)
def test_readers_know_repeated_chunk_records_by_their_bytes(
    version: int, chunks: list[bytes | str]
) -> None:
    """validate's short way (read) takes a frame record that repeats the one before
    but for its text without parsing it; it finds what reading every record in full finds:
    on the lines the recorder writes, with the turn cancelled or ended between chunks (later
    chunks are flagged: they repeat a frame whose findings they must not skip), and on lines
    a corrupted recording holds (a text that is no JSON string: an unreadable line). show's
    short way (annotate_lines) shows the same timeline, gaps in the seqs included."""
    frames: Frames = [*setup(version), prompt()]
    if version == 2:
        frames += [state("running"), user_message()]
    events = {
        "cancel": (C, note("session/cancel", {"sessionId": S})),
        "end": (A, ok(10, {"stopReason": "cancelled"})) if version == 1 else idle("cancelled"),
        "echo": (C, CLEAN_CHUNK),  # a client sending what only an agent sends
    }
    envelope = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"' + S.encode()
        + b'","update":{"sessionUpdate":"agent_message_chunk","messageId":"m",'
        + b'"content":{"type":"text","text":"%s"}}}}'
    )  # fmt: skip
    skipped = set()  # frames before which a live-only notice, never recorded, was sent
    later = set()  # frames from which on the time is a millisecond later (another read)
    for chunk in chunks:
        if chunk == "gap":
            skipped.add(len(frames))
        elif chunk == "tick":
            later.add(len(frames))
        elif isinstance(chunk, str):
            frames.append(events[chunk])
        else:
            frames.append((A, chunk if chunk.startswith(b"{") else envelope.replace(b"%s", chunk)))
    lines = [start_record(T0, ["agent"], 1).rstrip(b"\n")]
    seq, ms = 0, 0
    for index, (side, message) in enumerate(frames):
        seq += 2 if index in skipped else 1
        ms += index in later
        t = T0.replace(".000000Z", f".{ms:03}000Z").encode()
        raw = message if isinstance(message, bytes) else orjson.dumps(message)
        # as the recorder writes a JSON frame (corrupted ones too: the recording is)
        lines.append(
            b'{"kind":"frame","seq":%d,"t":"%s","from":"%s","msg":%s}'
            % (seq, t, side.encode(), raw)
        )
    numbered = list(enumerate(lines, start=1))
    records = [r for r in (parse_record(number, line) for number, line in numbered) if r]
    long_way = [f for _, f in located(annotate(records))]
    assert [f for _, f in located(read(numbered, run=256))] == long_way
    # show's short way shows what reading every record shows, whatever the view
    for only in (None, TimelineFilter(side=A), TimelineFilter(violations_only=True)):
        for stored in (True, False):
            shown = timeline(annotate(records, stored=stored), only)
            for run in (1, 2, 256):  # repeated chunks one by one, in twos, or together
                assert timeline(read(numbered, stored=stored, run=run), only) == shown
    readers_agree(records, numbered)


def streamed_turn_lines(chunks: int) -> tuple[Frames, list[bytes]]:
    """The recorder's lines (without their newlines) of a v2 session whose turn has begun,
    and then ``chunks`` chunks of the agent's message, each with another text; and the
    frames before the chunks."""
    frames = [*setup(2), *turn()[:4]]
    lines = [start_record(T0, ["agent"], 1).rstrip(b"\n")]
    for seq, (side, message) in enumerate(frames, start=1):
        lines.append(frame_record(seq, T0, side, parse_frame(orjson.dumps(message)))[:-1])
    for seq in range(len(frames) + 1, len(frames) + chunks + 1):
        chunk = CLEAN_CHUNK.replace(b'"ab"', orjson.dumps(f"word {seq} "))
        lines.append(frame_record(seq, T0, A, parse_frame(chunk))[:-1])
    return frames, lines


def test_stats_and_the_conversation_count_repeated_chunks_as_reading_them_does() -> None:
    """What a run of repeated chunks leaves in stats and the conversation is what each
    chunk read in full leaves: the frames that addressed the message (the report highlights
    them), the time to the first chunk when the first chunks' times cannot be read, and
    nothing from chunks that name no session (after chunks of a session that do)."""
    frames, lines = streamed_turn_lines(0)
    seq = len(frames)

    def add(t: str, chunk: bytes, count: int) -> None:
        nonlocal seq
        for _ in range(count):
            seq += 1
            text = chunk.replace(b'"ab"', orjson.dumps(f"word {seq} "))
            lines.append(frame_record(seq, t, A, parse_frame(text))[:-1])

    add("soon", CLEAN_CHUNK, 5)  # no time to read: the turn still waits for its first chunk
    add(T0.replace("00.000", "01.500"), CLEAN_CHUNK, 5)
    add(T0, CLEAN_CHUNK.replace(b'"sessionId":"' + S.encode() + b'",', b""), 5)
    lines.append(frame_record(seq + 1, T0, A, parse_frame(orjson.dumps(idle()[1])))[:-1])
    numbered = list(enumerate(lines, start=1))
    records = [r for r in (parse_record(number, line) for number, line in numbered) if r]
    readers_agree(records, numbered)
    stats = Stats()
    for item in annotate(records):
        stats.add(item)
    assert [turn["first_chunk"] for turn in stats.as_json()["turns"]] == [1.5]
    (_, conversation), *_ = Conversation.per_connection(annotate(records, validate=False))
    message = conversation.sessions[S].entities[(EntityType.AGENT_MESSAGE, "m")]
    assert message.seqs == list(range(len(frames) + 1, len(frames) + 11))


@pytest.mark.parametrize("validate", [True, False])
def test_a_run_of_repeated_chunks_leaves_the_readers_state_as_reading_them_does(
    validate: bool,
) -> None:
    """The short way takes a run of chunks in one loop and counts them once: the turn's
    updates and the last seq read are what reading every record gives, run by run or
    frame by frame (with the validator, as validate; without, as show)."""
    from acp_proxy.readers.annotate import _Annotator

    frames, lines = streamed_turn_lines(40)
    numbered = list(enumerate(lines, start=1))

    def state(annotator: _Annotator) -> tuple[int | None, int]:
        assert annotator.wire is not None
        turn_now = annotator.wire.current_turn(S)
        return (None if turn_now is None else turn_now.updates), annotator.last_seq

    long_way = _Annotator(validate, stored=not validate)
    for number, line in numbered:
        record = parse_record(number, line)
        assert record is not None
        list(long_way.feed(record))
    # the turn's updates: its state_update, the user's message and the 40 chunks
    assert state(long_way) == (2 + 40, len(frames) + 40)
    for run in (1, 3, 256):
        short = _Annotator(validate, stored=not validate, short=True)
        taken = 0
        for item in short.runs(numbered, run):
            if isinstance(item, list):
                taken += len(item)
                continue
            record = parse_record(*item)
            assert record is not None
            list(short.feed(record))
        assert taken > 30  # the short way was taken
        assert state(short) == state(long_way)


def test_validate_reads_a_streamed_turn_without_parsing_its_chunks(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The short way is taken: of a turn's 200 chunks, only the first few records are read in
    full (a template is learned, then matched), the rest are known by their bytes."""
    import acp_proxy.readers.annotate

    parsed: list[int] = []

    def counting(number: int, line: bytes) -> Any:
        parsed.append(number)
        return parse_record(number, line)

    monkeypatch.setattr(acp_proxy.readers.annotate, "parse_record", counting)
    frames, lines = streamed_turn_lines(200)
    lines.append(frame_record(len(frames) + 201, T0, A, parse_frame(orjson.dumps(idle()[1])))[:-1])
    assert [f for _, f in located(read(enumerate(lines, start=1), run=256))] == []
    assert len(parsed) < len(frames) + 2 + 5
