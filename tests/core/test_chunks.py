"""Templates of streamed chunks: a frame is only ever taken for a checked one around
another text when it is exactly that (soundness), and a plain next chunk always is."""

from __future__ import annotations

import copy
from typing import Any

import orjson
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from acp_proxy.core.chunks import Shortcut, TextTemplates
from acp_proxy.core.framing import parse_frame
from acp_proxy.core.validator import Validator
from acp_proxy.core.wire import Message, WireModel
from tests.exchanges import CLEAN_CHUNK, S

TEXT = ("params", "update", "content", "text")
KEY = ("s", "agent_message_chunk", 2)


def chunk(text: str, message_id: str = "m", after: bytes = b"", order: int = 0) -> bytes:
    """A chunk's bytes, its text written by orjson; ``after``: members after the text."""
    literal = orjson.dumps(text)
    content = (
        b'{"type":"text","text":' + literal + after + b"}"
        if order == 0
        else b'{"text":' + literal + after + b',"type":"text"}'
    )
    return (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"agent_message_chunk","messageId":'
        + orjson.dumps(message_id)
        + b',"content":'
        + content
        + b"}}}"
    )


def learned(raw: bytes) -> TextTemplates:
    templates = TextTemplates()
    templates.learn(raw, orjson.loads(raw), TEXT, *KEY)
    return templates


def with_text(value: Any, text: Any) -> Any:
    value = copy.deepcopy(value)
    value["params"]["update"]["content"]["text"] = text
    return value


def test_the_next_chunk_of_a_stream_matches_whatever_its_text() -> None:
    templates = learned(chunk("Hello"))
    for text in ["", " world", 'say "hi"', "a\\", "\\", "line\nbreak", "é ✓ 😀", '\\"', "}}}"]:
        assert templates.match(chunk(text), *KEY), text


def test_a_different_shape_does_not_match() -> None:
    templates = learned(chunk("Hello"))
    assert not templates.match(chunk("Hello", message_id="other"), *KEY)
    assert not templates.match(chunk("Hello", after=b',"annotations":null'), *KEY)
    assert not templates.match(chunk("Hello", order=1), *KEY)
    # the text's place made to hold structure: a content of another type
    prefix = chunk("")[: chunk("").rindex(b'""') + 1]
    injected = prefix + b'x","type":"image' + b'"}}}}'
    assert orjson.loads(injected)["params"]["update"]["content"]["type"] == "image"
    assert not templates.match(injected, *KEY)
    # a backslash that would escape the closing quote
    assert not templates.match(prefix + b'x\\"}}}}', *KEY)


def test_the_template_is_cut_around_the_text_the_value_holds_or_not_made() -> None:
    # written with an escape orjson does not use: not found, no template
    raw = chunk("A").replace(b'"text":"A"', b'"text":"\\u0041"')
    assert orjson.loads(raw)["params"]["update"]["content"]["text"] == "A"
    assert not learned(raw).match(chunk("B"), *KEY)
    # the text's bytes also stand later in the frame, as another member: that place fails
    # the proof, the text's own is found next
    raw = chunk("m", after=b',"x":"m"')
    assert learned(raw).match(chunk("n", after=b',"x":"m"'), *KEY)
    assert not learned(raw).match(chunk("m", after=b',"x":"n"'), *KEY)
    # a duplicate key: the template is cut around the text the value holds (the last)
    raw = chunk("a", after=b',"text":"b"')
    assert orjson.loads(raw)["params"]["update"]["content"]["text"] == "b"
    assert learned(raw).match(chunk("a", after=b',"text":"c"'), *KEY)
    assert not learned(raw).match(chunk("z", after=b',"text":"b"'), *KEY)
    # the text's bytes end an escaped quote further on: the next place from the end is tried
    raw = chunk("", after=b',"_meta":{"k":"\\""}')
    assert orjson.loads(raw)["params"]["update"]["content"]["_meta"] == {"k": '"'}
    assert learned(raw).match(chunk("more", after=b',"_meta":{"k":"\\""}'), *KEY)


def test_a_big_frame_is_never_made_a_template() -> None:
    """The proof copies the frame; a streamed chunk is small, a 100 KiB one is not learned."""
    assert not learned(chunk("x" * 100_000)).match(chunk("y" * 100_000), *KEY)
    assert learned(chunk("x" * 1_000)).match(chunk("y" * 100_000), *KEY)
    # nor one whose envelope (all but the text) is over 4 KiB: the templates stay small
    meta = b',"_meta":{"k":"' + b"m" * 5_000 + b'"}'
    assert not learned(chunk("x", after=meta)).match(chunk("y", after=meta), *KEY)
    meta = b',"_meta":{"k":"' + b"m" * 3_000 + b'"}'
    assert learned(chunk("x", after=meta)).match(chunk("y", after=meta), *KEY)


def test_the_slots_are_bounded() -> None:
    """A peer inventing sessions cannot grow the templates: past 64 slots they start over."""
    templates = TextTemplates()
    for n in range(200):
        raw = chunk("x", message_id=f"m{n}")
        templates.learn(raw, orjson.loads(raw), TEXT, f"s{n}", "agent_message_chunk", 2)
        assert len(templates._slots) <= 64
    assert templates.match(chunk("y", message_id="m199"), "s199", "agent_message_chunk", 2)


def test_a_key_learns_again_after_a_miss_and_pauses_when_nothing_repeats() -> None:
    templates = learned(chunk("a"))
    assert templates.match(chunk("b"), *KEY)
    # the next message: its first chunk misses, is learned, the next one matches
    assert not templates.match(chunk("c", message_id="m2"), *KEY)
    second = chunk("c", message_id="m2")
    templates.learn(second, orjson.loads(second), TEXT, *KEY)
    assert templates.match(chunk("d", message_id="m2"), *KEY)
    # frames that never repeat: four tries in a row (m3-m6), then one on every 16th frame
    for n in range(3, 22):
        raw = chunk("x", message_id=f"m{n}")
        assert not templates.match(raw, *KEY)
        templates.learn(raw, orjson.loads(raw), TEXT, *KEY)
    assert not templates.match(chunk("y", message_id="m21"), *KEY)  # skipped
    raw = chunk("x", message_id="m22")
    templates.learn(raw, orjson.loads(raw), TEXT, *KEY)  # the 16th since: tried
    assert templates.match(chunk("z", message_id="m22"), *KEY)


def test_a_one_of_a_kind_first_chunk_does_not_keep_the_next_ones_from_a_template() -> None:
    """Qwen Code opens a message with an empty chunk carrying usage in _meta; the chunks
    after it are learned and matched all the same."""
    first = chunk("", after=b',"_meta":{"usage":{"outputTokens":5}}')
    templates = learned(first)
    hello = chunk("Hello ")
    assert not templates.match(hello, *KEY)
    templates.learn(hello, orjson.loads(hello), TEXT, *KEY)
    assert templates.match(chunk("from "), *KEY)
    # four one-of-a-kind frames in a row are all tried: the fourth is learned too
    templates = learned(first)
    for n in range(2, 5):
        raw = chunk("x", message_id=f"m{n}")
        templates.learn(raw, orjson.loads(raw), TEXT, *KEY)
    assert templates.match(chunk("y", message_id="m4"), *KEY)


TEXTS = st.text(alphabet=st.sampled_from('ab "\\/\n\t\x01é😀}{,:'), max_size=12)
NOISE = st.lists(st.sampled_from(['"', "\\", ",", ":", "{", "}", "x", "u", "0", "n", "é"]))


@settings(max_examples=300, deadline=None)
@given(TEXTS, TEXTS, NOISE, st.integers(0, 1), st.sampled_from([b"", b',"_meta":{"k":"\\""}']))
@example("Hello", "", ["x", '"', ",", '"', "x", '"', ":", '"', "x"], 0, b"")
@example("Hello", "", ["\\"], 0, b"")
def test_a_match_is_the_template_with_another_text_and_a_plain_next_chunk_matches(
    first: str, second: str, noise: list[str], order: int, after: bytes
) -> None:
    raw = chunk(first, after=after, order=order)
    value = orjson.loads(raw)
    templates = learned(raw)
    # completeness: the same frame with another text, as orjson writes it
    literal = orjson.dumps(first)
    if raw.count(literal) == 1:
        assert templates.match(chunk(second, after=after, order=order), *KEY)
    # soundness: any bytes between prefix and suffix that make a frame, if taken, differ
    # from the template in the text only
    at = raw.rindex(literal)
    candidate = raw[: at + 1] + "".join(noise).encode() + raw[at + len(literal) - 1 :]
    try:
        parsed = orjson.loads(candidate)
    except orjson.JSONDecodeError:
        return  # the caller only asks about frames that parsed
    if templates.match(candidate, *KEY):
        text = parsed["params"]["update"]["content"]["text"]
        assert isinstance(text, str)
        assert parsed == with_text(value, text)


# --- the shortcut whole: what a validator, the observer and the readers ask -----------


class Connection:
    """A connection fed through a wire model (and its validator), and its shortcut: by
    default v2, with its session open and a turn running."""

    def __init__(self, validate: bool = True, frames: list[Any] | None = None) -> None:
        from tests.exchanges import prompt, setup, state, user_message

        if frames is None:
            frames = [*setup(2), prompt(10), state("running"), user_message("u1")]

        self.wire = WireModel()
        self.validator = Validator(self.wire) if validate else None
        self.shortcut = self.validator.shortcut if self.validator else Shortcut(self.wire)
        self.seq = 0
        for side, message in frames:
            self.feed(side, orjson.dumps(message))

    def feed(self, side: str, raw: bytes) -> tuple[Message, list[Any]]:
        """One frame parsed and checked: its message and findings."""
        self.seq += 1
        message = self.wire.feed(side, parse_frame(raw), self.seq, "")
        if self.validator is None:
            assert not self.shortcut.check(message)  # without rules it checks nothing
            return message, []
        return message, self.validator.check(message)


def clean(text: str) -> bytes:
    return CLEAN_CHUNK.replace(b'"ab"', orjson.dumps(text))


@pytest.mark.parametrize("validate", [True, False])
def test_after_a_known_chunk_the_next_ones_are_taken_by_their_bytes(validate: bool) -> None:
    connection = Connection(validate)
    shortcut = connection.shortcut
    connection.feed("agent", clean("one"))
    assert not shortcut.repeatable  # learned: only a match proves the shape repeats
    message, _ = connection.feed("agent", clean("two"))
    assert shortcut.repeatable
    assert message.turn is not None
    updates = message.turn.updates
    # bytes nobody parsed: the text, and the turn counts them as feeding them would
    assert shortcut.repeat("agent", clean('say "three"\n')) == 'say "three"\n'
    assert shortcut.repeat("client", clean("four")) is None  # only the agent streams
    assert shortcut.repeat("agent", clean("x").replace(b'"m"', b'"n"')) is None  # another
    envelope = shortcut.repeating("agent")
    assert envelope is not None and clean("five").startswith(envelope[0])
    shortcut.taken(envelope, 3)
    assert message.turn.updates == updates + 4


def test_with_rules_the_shortcut_checks_a_chunk_the_long_way_would_pass() -> None:
    connection = Connection()
    shortcut = connection.shortcut
    for text in ("one", "two", "three"):
        assert connection.feed("agent", clean(text))[1] == []
    assert shortcut.repeatable
    # a chunk of a session nobody created: flagged (the long way), and nothing repeats it
    unknown = clean("x").replace(S.encode(), b"nobody")
    assert [f.rule for f in connection.feed("agent", unknown)[1]] == ["unknown-session"]
    assert not shortcut.repeatable
    assert shortcut.repeat("agent", clean("four")) is None


def test_a_known_chunk_that_breaks_a_rule_is_never_repeated() -> None:
    """A known chunk still runs the rules that follow state: v1's update after the
    cancelled prompt's answer is flagged, and the frame after it is read in full."""
    from tests.exchanges import note, ok, prompt, setup

    connection = Connection(frames=[*setup(1), prompt(10)])
    v1 = CLEAN_CHUNK.replace(b'"messageId":"m",', b"")
    for text in ("one", "two"):
        assert connection.feed("agent", v1.replace(b'"ab"', orjson.dumps(text)))[1] == []
    assert connection.shortcut.repeatable
    connection.feed("client", orjson.dumps(note("session/cancel", {"sessionId": S})))
    connection.feed("agent", orjson.dumps(ok(10, {"stopReason": "cancelled"})))
    found = connection.feed("agent", v1.replace(b'"ab"', b'"late"'))[1]
    assert [f.rule for f in found] == ["update-after-cancelled"]
    assert not connection.shortcut.repeatable
    assert connection.shortcut.repeat("agent", v1.replace(b'"ab"', b'"later"')) is None


def test_a_chunk_that_is_not_text_is_never_repeated() -> None:
    connection = Connection(validate=False)
    image = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"' + S.encode()
        + b'","update":{"sessionUpdate":"agent_message_chunk","messageId":"m",'
        + b'"content":{"type":"image","mimeType":"image/png","data":"AA==","text":"x"}}}}'
    )  # fmt: skip
    for _ in range(3):
        connection.feed("agent", image)
        assert not connection.shortcut.repeatable


def test_switched_off_every_chunk_goes_the_long_way() -> None:
    connection = Connection()
    connection.shortcut.enabled = False
    for text in ("one", "two", "three"):
        message = connection.wire.feed("agent", parse_frame(clean(text)), 50, "")
        assert not connection.shortcut.check(message)
        assert not connection.shortcut.repeatable
