"""The wire model: kinds, pairing, turns, bounded memory; and the bugs it fixed."""

from __future__ import annotations

from typing import Any

import orjson

from acp_proxy.core.framing import parse_frame
from acp_proxy.core.wire import (
    RECENT,
    BatchMessage,
    InvalidMessage,
    Kind,
    Message,
    NotificationMessage,
    NotJsonMessage,
    RequestMessage,
    ResponseMessage,
    Side,
    WireModel,
    is_notice,
    kind_of,
)

S = "s1"


def feed(model: WireModel, side: str, message: Any, seq: int, t: str = "") -> Message:
    raw = message if isinstance(message, bytes) else orjson.dumps(message)
    return model.feed(side, parse_frame(raw), seq, t)


def req(id_: Any, method: str, **params: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def ok(id_: Any, **result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def err(id_: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": -32603, "message": "no"}}


def update(**fields: Any) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": S, "update": fields},
    }


def initialized(version: int) -> WireModel:
    model = WireModel()
    feed(model, "client", req(0, "initialize", protocolVersion=version), 1)
    feed(model, "agent", ok(0, protocolVersion=version), 2)
    assert model.negotiated == version
    return model


def test_kinds():
    model = WireModel()
    cases = [
        (b"not json", Kind.NOT_JSON),
        (b"[1, 2]", Kind.BATCH),
        (b"42", Kind.INVALID),
        (b'{"jsonrpc":"2.0"}', Kind.INVALID),
        (b'{"jsonrpc":"2.0","method":7}', Kind.INVALID),
        (orjson.dumps(req(1, "session/new")), Kind.REQUEST),
        (orjson.dumps(update(sessionUpdate="x")), Kind.NOTIFICATION),
        (orjson.dumps(ok(1)), Kind.RESPONSE),
    ]
    for seq, (raw, kind) in enumerate(cases, 1):
        assert (
            feed(model, "client" if kind is not Kind.RESPONSE else "agent", raw, seq).kind is kind
        )
        # The stateless classifier (replay's) says the same of the parsed value.
        if kind is not Kind.NOT_JSON:
            assert kind_of(orjson.loads(raw)) is kind


def test_each_kind_has_its_type():
    model = WireModel()
    cases = [
        (b"not json", NotJsonMessage),
        (b"[1]", BatchMessage),
        (b"42", InvalidMessage),
        (orjson.dumps(req(1, "session/new")), RequestMessage),
        (orjson.dumps(update(sessionUpdate="x")), NotificationMessage),
        (orjson.dumps({"jsonrpc": "2.0", "method": "_x"}), NotificationMessage),
        (orjson.dumps(ok(1)), ResponseMessage),
        (orjson.dumps(ok(77)), ResponseMessage),  # answering nothing pending
    ]
    for seq, (raw, cls) in enumerate(cases, 1):
        side = "agent" if cls is ResponseMessage else "client"
        message = feed(model, side, raw, seq)
        assert type(message) is cls and message.kind is cls.kind


def test_batch_elements_are_classified_and_a_nested_array_is_no_message():
    batch = orjson.dumps([req(1, "session/new"), [1], {"jsonrpc": "2.0"}, ok(9)])
    message = feed(WireModel(), "client", batch, 1)
    assert message.kind is Kind.BATCH and isinstance(message, BatchMessage)
    assert [m.kind for m in message.elements] == [
        Kind.REQUEST,
        Kind.INVALID,
        Kind.INVALID,
        Kind.RESPONSE,
    ]


def test_a_response_names_its_request_with_the_latency():
    model = WireModel()
    asked = feed(model, "client", req(7, "session/new", cwd="/"), 1, "2026-01-01T00:00:00.000000Z")
    answer = feed(model, "agent", ok(7, sessionId=S), 2, "2026-01-01T00:00:01.500000Z")
    assert answer.request is asked.request and answer.method == "session/new"
    assert isinstance(answer, ResponseMessage)
    assert answer.latency == 1.5 and answer.params == {"cwd": "/"}
    assert not model.pending


def test_ids_keep_their_type_and_sides_are_apart():
    model = WireModel()
    feed(model, "client", req(3, "session/new"), 1)
    feed(model, "agent", req("3", "session/request_permission", sessionId=S), 2)
    wrong_type = feed(model, "agent", ok("3"), 3)  # the agent answering its own id
    assert isinstance(wrong_type, ResponseMessage)
    assert wrong_type.request is None and wrong_type.unmatched == "unknown"
    right = feed(model, "agent", ok(3), 4)
    assert right.method == "session/new"
    assert feed(model, "client", ok("3"), 5).method == "session/request_permission"
    again = feed(model, "client", ok("3"), 6)
    assert isinstance(again, ResponseMessage)
    assert again.request is None and again.unmatched == "answered"


def test_a_reused_pending_id_is_reported_and_replaces_the_old_request():
    model = WireModel()
    first = feed(model, "client", req(1, "session/new"), 1)
    second = feed(model, "client", req(1, "session/list"), 2)
    assert isinstance(second, RequestMessage)
    assert second.reuses is first.request
    assert feed(model, "agent", ok(1), 3).method == "session/list"


def test_answered_ids_are_remembered_within_a_bound():
    model = WireModel()
    for i in range(RECENT * 3):
        feed(model, "client", req(i, "session/list"), 2 * i + 1)
        feed(model, "agent", ok(i), 2 * i + 2)
    assert not model.pending and len(model._answered) == RECENT


def test_v2_turn_from_prompt_to_idle():
    model = initialized(2)
    prompt = feed(model, "client", req(5, "session/prompt", sessionId=S, prompt=[]), 3)
    turn = prompt.opened
    assert turn is not None and prompt.turn is turn and turn.prompt is prompt.request
    running = feed(model, "agent", update(sessionUpdate="state_update", state="running"), 4)
    assert running.turn is turn and running.opened is None
    accepted = feed(model, "agent", ok(5, messageId="u1"), 5)
    assert accepted.closed is None and not turn.ended
    idle = update(sessionUpdate="state_update", state="idle", stopReason="end_turn")
    closing = feed(model, "agent", idle, 6)
    assert closing.closed is turn and turn.ended and turn.stop_reason == "end_turn"
    assert model.current_turn(S) is None and model.state(S) == "idle"


def test_v2_rejected_prompt_is_no_turn():
    model = initialized(2)
    opened = feed(model, "client", req(5, "session/prompt", sessionId=S, prompt=[]), 3).opened
    closed = feed(model, "agent", err(5), 4).closed
    assert closed is opened and closed is not None and closed.void and closed.rejected
    nxt = feed(model, "client", req(6, "session/prompt", sessionId=S, prompt=[]), 5).opened
    assert nxt is not None and nxt is not opened and nxt.number == 2


def test_v2_background_work_opens_a_turn_without_a_prompt():
    model = initialized(2)
    running = feed(model, "agent", update(sessionUpdate="state_update", state="running"), 3)
    assert running.opened is not None and running.opened.prompt is None


def test_v1_turn_ends_with_the_stop_reason_response():
    model = initialized(1)
    opened = feed(model, "client", req(5, "session/prompt", sessionId=S, prompt=[]), 3).opened
    chunk = feed(model, "agent", update(sessionUpdate="agent_message_chunk"), 4)
    assert chunk.turn is opened
    # a state_update means nothing on v1
    assert (
        feed(model, "agent", update(sessionUpdate="state_update", state="idle"), 5).closed is None
    )
    closing = feed(model, "agent", ok(5, stopReason="cancelled"), 6)
    assert opened is not None
    assert closing.closed is opened and opened.stop_reason == "cancelled" and not opened.void


def test_side_is_typed():
    model = WireModel()
    message = feed(model, "agent", update(sessionUpdate="x"), 1)
    assert message.side is Side.AGENT and message.side.other is Side.CLIENT


def test_a_notice_is_the_same_thing_with_and_without_a_connection():
    """Replay tells notices apart from values alone; the wire model from its messages:
    one definition."""
    notice = update(sessionUpdate="notice", severity="info", title="hi")
    no_session = {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"update": notice["params"]["update"]},
    }
    with_id = {**notice, "id": 4}
    cases = [
        (notice, True),
        (no_session, True),
        (with_id, False),  # a request, not a notification
        (update(sessionUpdate="agent_message_chunk"), False),
        ({"jsonrpc": "2.0", "method": "_x/notice", "params": notice["params"]}, False),
        ([notice], False),  # a batch is no notice (its element is)
        (42, False),
    ]
    model = WireModel()
    for seq, (value, expected) in enumerate(cases, 1):
        assert is_notice(value) is expected, value
        assert feed(model, "agent", value, seq).is_notice is expected, value


def test_a_turns_first_agent_output_is_the_wire_models():
    """The time to the first agent chunk has one home: the Turn. It counts from the prompt,
    once a prompt is there, and takes the first agent output whose time can be read."""
    model = initialized(2)
    t = "2026-01-01T00:00:{}Z".format
    feed(model, "agent", update(sessionUpdate="state_update", state="running"), 3, t("01.000"))
    chunk = update(sessionUpdate="agent_message_chunk", messageId="m", content={})
    feed(model, "agent", chunk, 4, t("01.500"))  # background work: no prompt to count from
    prompt = feed(model, "client", req(5, "session/prompt", sessionId=S, prompt=[]), 5, t("02.000"))
    turn = prompt.turn
    assert turn is not None
    thought = update(sessionUpdate="agent_thought_chunk", messageId="m", content={})
    feed(model, "agent", thought, 6, t("02.100"))  # reasoning is no output
    feed(model, "agent", chunk, 7, "soon")  # a time that cannot be read
    assert first_output(turn) == (None, None)
    model.again(S, 3, "agent_message_chunk", 8, t("02.750"))  # taken the short way
    assert first_output(turn) == (8, 0.75)
    feed(model, "agent", chunk, 11, t("03.000"))
    assert first_output(turn) == (8, 0.75)


def first_output(turn):
    return turn.first_output_seq, turn.first_output
