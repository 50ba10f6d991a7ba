"""The validator, rule by rule: the smallest exchange that breaks each rule, and a
clean twin that must not be flagged at all. Each docstring quotes the sentence
the rule comes from."""

from __future__ import annotations

import importlib
import sys
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from acp_proxy.core.framing import Framer, parse_frame
from acp_proxy.core.rules import CATALOG, RULES, Level, Scope
from acp_proxy.core.schema import schema_sources
from acp_proxy.core.validator import Validator, Violation
from tests.exchanges import (
    OPTIONS,
    A,
    C,
    Frames,
    S,
    check,
    chunk_frames,
    err,
    findings,
    idle,
    note,
    ok,
    prompt,
    req,
    rules,
    setup,
    state,
    turn,
    upd,
    user_message,
)

#: The shipped schemas' tags, as their SOURCES.md says (findings name them).
TAG_V1, TAG_V2 = schema_sources().tag(1), schema_sources().tag(2)

#: A text chunk's content.
CHUNK_TEXT = {"type": "text", "text": "ok"}

# --- JSON-RPC and framing -------------------------------------------------------


def test_not_json():
    """ "nothing but ACP messages may be written to stdout" (transport)."""
    found = check("not-json", [(A, b"Loading model...")], [(A, note("_log"))])
    assert found[0].seq == 1


def test_not_utf8():
    """ "UTF-8 JSON-RPC messages, one per line" (transport)."""
    check("not-utf8", [(A, b"\xff\xfe")], [(A, note("_log"))])


def test_lone_surrogate():
    """RFC 8259, 8.2: the grammar "allows member names and string values to contain bit
    sequences that cannot encode Unicode characters; for example, "\\uDEAD" (a single
    unpaired UTF-16 surrogate)". Such a frame is a message (never not-json), with a warning."""
    cut = b'{"jsonrpc":"2.0","method":"_log","params":{"text":"cut \\ud83d"}}'
    whole = b'{"jsonrpc":"2.0","method":"_log","params":{"text":"whole \\ud83d\\ude00"}}'
    found = check("lone-surrogate", [(A, cut)], [(A, whole)])
    assert [f.rule for f in found] == ["lone-surrogate"]
    # the request it is is answered, and paired, as any other
    request = b'{"jsonrpc":"2.0","id":1,"method":"_x","params":{"q":"\\udead"}}'
    assert rules([(C, request), (A, ok(1, {}))]) == ["lone-surrogate"]


def test_oversized_frame():
    """Every frame is in the transcript, whole: a line longer than the relay observes
    (ACP_PROXY_MAX_FRAME) is relayed whole, but only its beginning is checked and kept, and
    that is said (never as not-json, nor as not-utf8 where the cap cuts a character)."""
    line = '{"jsonrpc":"2.0","method":"_log","params":{"text":"é"}}'.encode()
    framer = Framer(cap=line.index("é".encode()) + 1)  # in the middle of the é
    frames = framer.feed(line[:9]) + framer.feed(line[9:] + b"\n" + line + b"\n")
    assert [f.oversized for f in frames] == [len(line)] * 2
    validator = Validator()
    found = [f for seq, frame in enumerate(frames, 1) for f in validator.feed(A, frame, seq)]
    assert [(f.rule, f.level) for f in found] == [("oversized-frame", Level.ERROR)] * 2
    assert f"a line of {len(line)} bytes" in found[0].message
    whole = Framer(cap=len(line)).feed(line + b"\n")
    assert Validator().feed(A, whole[0], 1) == []


def test_crlf_line_ending():
    """ "delimited by \\n; a message never contains a raw newline" (transport)."""
    check("crlf-line-ending", [(A, orjson.dumps(note("_log")) + b"\r")], [(A, note("_log"))])


def test_blank_line():
    """Messages are "delimited by \\n": an empty line is not a message (transport)."""
    check("blank-line", [(C, b"")], [(C, note("_log"))])


def test_batch():
    """v1: "Messages are individual JSON-RPC requests, notifications, or responses"."""
    check(
        "batch",
        [*setup(1), (C, [note("_a"), note("_b")])],
        [*setup(1), (C, note("_a")), (C, note("_b"))],
    )
    # v2 Transports: "A client or agent MAY send an array filled with Request objects".
    assert rules([*setup(2), (C, [note("_a"), note("_b")])]) == []


def test_batch_empty():
    """v2 Transports, "JSON-RPC Batch Messages": "ACP v2 follows the JSON-RPC 2.0 batch rules"
    (an empty array is an invalid request)."""
    check("batch-empty", [*setup(), (C, [])], [*setup(), (C, [note("_a")])])


def test_batch_elements_are_messages_of_their_own():
    """Each element of a v2 batch is checked as a message: ids pair across arrays, a non-object
    element is invalid, and each element's shape is checked."""
    batch = [req(5, "session/new", {"cwd": "/", "mcpServers": []}), note("_x")]
    answers = [ok(5, {"sessionId": "s2"})]
    assert rules([*setup(), (C, batch), (A, answers)]) == []
    found = findings([*setup(), (C, batch), (A, [ok(5, {}), 3])])
    assert [(f.rule, f.seq) for f in found] == [("schema", 6), ("invalid-message", 6)]
    assert found[0].message == (
        "session/new result.sessionId: required field missing (NewSessionResponse)"
    )
    # an answer to nothing in the batch, and a request left unanswered
    assert rules([*setup(), (C, batch), (A, [ok(6, {"sessionId": "s2"})])]) == [
        "unexpected-response",
        "unanswered-request",
    ]


def test_jsonrpc_version():
    """JSON-RPC 2.0: "jsonrpc ... MUST be exactly "2.0"."."""
    check("jsonrpc-version", [(C, {"jsonrpc": "1.0", "method": "_x"})], [(C, note("_x"))])


def test_invalid_message():
    """JSON-RPC 2.0: a response has "either the result member or error member ... but not both"."""
    both = {"jsonrpc": "2.0", "id": 0, "result": {}, "error": {"code": 1, "message": "m"}}
    check("invalid-message", [(C, req(0, "_x")), (A, both)], [(C, req(0, "_x")), (A, ok(0, {}))])
    assert "invalid-message" in rules([(C, {"jsonrpc": "2.0", "id": 1})])
    assert "invalid-message" in rules([(C, 42)])
    # "params ... MUST be provided as a Structured value" (JSON-RPC 2.0, 4.2), an extension
    # method's too (a known method's params are the schema's to check)
    for params in ("x", 5, None):
        bad = [
            (C, {"jsonrpc": "2.0", "id": 9, "method": "_x/foo", "params": params}),
            (A, ok(9, {})),
        ]
        assert rules(bad) == ["invalid-message"], params
    for structured in ({}, [1], {"a": 1}):
        assert rules([(C, req(9, "_x/foo", structured)), (A, ok(9, {}))]) == [], structured


def test_invalid_id():
    """JSON-RPC 2.0: an id "MUST contain a String, Number, or NULL value"; ACP ids are integers or strings."""
    bad: Frames = [(C, req({"n": 1}, "_x"))]
    check("invalid-id", bad, [(C, req("a", "_x")), (A, ok("a", None))])
    assert "invalid-id" in rules([(C, req(1.5, "_x"))])


def test_invalid_error_object():
    """JSON-RPC 2.0: the error object has "code ... MUST be an integer" and "message ... a String"."""
    bad: Frames = [(C, req(0, "_x")), (A, {"jsonrpc": "2.0", "id": 0, "error": "nope"})]
    check("invalid-error-object", bad, [(C, req(0, "_x")), (A, err(0))])


def test_unexpected_response():
    """JSON-RPC 2.0: a response answers a request; "id ... MUST be the same as the value of the id member in the Request"."""
    never = check("unexpected-response", [(A, ok(7, {}))], [(C, req(7, "_x")), (A, ok(7, {}))])
    assert "never sent" in never[0].message
    twice = findings([(C, req(7, "_x")), (A, ok(7, {})), (A, ok(7, {}))])
    assert [f.rule for f in twice] == ["unexpected-response"]
    assert "already answered" in twice[0].message
    # 7 and "7" are different ids
    assert rules([(C, req(7, "_x")), (A, ok("7", {}))]) == [
        "unexpected-response",
        "unanswered-request",
    ]


def test_a_response_with_id_null_is_only_for_a_request_that_could_not_be_read():
    """JSON-RPC 2.0, 5: the id "MUST be Null" when it could not be detected (a Parse error,
    an Invalid Request); "The Server MUST NOT reply to a Notification", also within a batch
    (NOTES.md). A result, or another error, with id null answers nothing."""
    cancel = (C, note("session/cancel", {"sessionId": S}))
    for version in (1, 2):
        parse = [*setup(version), (A, err(None, -32700)), (A, err(None, -32600))]
        found = check("unexpected-response", [*setup(version), cancel, (A, ok(None, {}))], parse)
        assert "with id null" in found[0].message
        assert rules([*setup(version), (A, err(None, -32603))]) == ["unexpected-response"]
    assert rules([*setup(), (C, [note("_x")]), (A, [ok(None, {})])]) == ["unexpected-response"]


def test_duplicate_request_id():
    """JSON-RPC 2.0: the id correlates request and response, so a pending id must not be reused."""
    bad: Frames = [(C, req(3, "_x")), (C, req(3, "_y")), (A, ok(3, {}))]
    clean: Frames = [(C, req(3, "_x")), (A, ok(3, {})), (C, req(3, "_y")), (A, ok(3, {}))]
    check("duplicate-request-id", bad, clean)
    # both sides may use the same id at once: they are different requests
    assert rules([(C, req(3, "_x")), (A, req(3, "_y")), (A, ok(3, {})), (C, ok(3, {}))]) == []


def test_unanswered_request():
    """JSON-RPC 2.0: "the Server MUST reply with a Response" to every request."""
    found = check("unanswered-request", [(C, req(5, "_x"))], [(C, req(5, "_x")), (A, ok(5, {}))])
    assert found[0].seq == 1


def test_wrong_direction():
    """ACP schema: session/update is handled by the client ("x-side": "client"), so only the agent sends it."""
    bad = [
        *setup(),
        (C, note("session/update", {"sessionId": S, "update": {"sessionUpdate": "_x"}})),
    ]
    check("wrong-direction", bad, [*setup(), upd({"sessionUpdate": "_x"})])
    assert "wrong-direction" in rules(
        [*setup(), (A, req(9, "session/prompt", {"sessionId": S, "prompt": []}))]
    )


def test_unknown_method():
    """ "Method names beginning with _ are extensions"; other unknown methods are not ACP."""
    (custom,) = check(
        "unknown-method", [*setup(), (C, note("frobnicate"))], [*setup(), (C, note("_frobnicate"))]
    )
    assert custom.message == (
        f"frobnicate is not in ACP v2 schema {TAG_V2} (the unstable schema does not define "
        "it either; a newer schema may; a custom method's name starts with _)"
    )
    # v1 methods are not v2 methods
    read = (A, req(9, "fs/read_text_file", {"sessionId": S, "path": "/a"}))
    found = findings([*setup(), read, (C, ok(9, {"content": ""}))])
    assert [f.rule for f in found] == ["unknown-method"]
    assert "v1" in found[0].message
    assert rules([*setup(1), read, (C, ok(9, {"content": ""}))]) == []


# --- Initialization and sessions -----------------------------------------------------


def test_before_initialize():
    """ "Before sending prompts, Clients MUST first complete the initialization phase and session setup." (Prompt Lifecycle)"""
    bad: Frames = [(C, req(1, "session/new", {"cwd": "/"})), (A, ok(1, {"sessionId": S}))]
    check("before-initialize", bad, setup())


def test_initialize_protocol_version():
    """ACP schema: the initialize response carries "the negotiated protocol version", an integer."""
    bad: Frames = [
        (C, req(0, "initialize", {"protocolVersion": 2})),
        (A, ok(0, {"protocolVersion": "2"})),
    ]
    check("initialize-protocol-version", bad, setup())


def test_unknown_session():
    """ "Before sending prompts, Clients MUST first complete ... session setup." (Prompt Lifecycle)"""
    bad = [
        *setup(),
        (
            C,
            req(
                10,
                "session/prompt",
                {"sessionId": "nope", "prompt": [{"type": "text", "text": "x"}]},
            ),
        ),
        (A, err(10)),
    ]
    check("unknown-session", bad, [*setup(), *turn()])
    # a session resumed on this connection is known
    resumed: Frames = [
        *setup(),
        (C, req(4, "session/resume", {"sessionId": "old", "cwd": "/"})),
        upd({"sessionUpdate": "state_update", "state": "idle"}, session="old"),
        (A, ok(4, {})),
        upd({"sessionUpdate": "_x"}, session="old"),
    ]
    assert rules(resumed) == []
    # "Updates may arrive before or after this response" (session/new)
    early: Frames = [
        *setup()[:2],
        (C, req(1, "session/new", {"cwd": "/", "mcpServers": []})),
        upd({"sessionUpdate": "available_commands_update", "availableCommands": []}),
        (A, ok(1, {"sessionId": S})),
    ]
    assert rules(early) == []
    # ...but a pending session/new vouches only for the session its answer names: an
    # update naming another is an unknown session, found once the answer has come
    vouched: Frames = [
        *setup(),
        (C, req(5, "session/new", {"cwd": "/", "mcpServers": []})),
        upd({"sessionUpdate": "_x"}, session="bogus"),  # seq 6
        upd({"sessionUpdate": "available_commands_update", "availableCommands": []}, "s2"),
        (A, ok(5, {"sessionId": "s2"})),
        upd({"sessionUpdate": "_x"}, session="bogus"),  # seq 9
        upd({"sessionUpdate": "_x"}, session="s2"),
    ]
    found = [(f.rule, f.seq, f.session) for f in findings(vouched)]
    assert found == [("unknown-session", 6, "bogus"), ("unknown-session", 9, "bogus")], found


def test_resume_without_state():
    """ACP schema: "The agent MUST send a current state_update after any requested history replay and before this response"."""
    bad: Frames = [
        *setup(),
        (C, req(4, "session/resume", {"sessionId": "old", "cwd": "/"})),
        (A, ok(4, {})),
    ]
    clean: Frames = [
        *setup(),
        (C, req(4, "session/resume", {"sessionId": "old", "cwd": "/"})),
        upd({"sessionUpdate": "state_update", "state": "idle"}, session="old"),
        (A, ok(4, {})),
    ]
    check("resume-without-state", bad, clean)


# --- Prompt acceptance -------------------------------------------------------------------


def test_prompt_empty():
    """ACP schema: "Clients MUST NOT send an empty array.\""""
    check("prompt-empty", [*setup(), prompt(10, []), (A, err(10, -32602))], [*setup(), *turn()])


def test_prompt_capability():
    """ "Clients MUST restrict types of content according to the Prompt Capabilities established during initialization." (1. User Message)"""
    image = [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]
    bad = [*setup(), prompt(10, image), (A, err(10, -32602))]
    clean = [*setup(prompt_caps={"image": {}}), prompt(10, image), (A, err(10, -32602))]
    check("prompt-capability", bad, clean)
    resource = [{"type": "resource", "resource": {"uri": "file:///a", "text": "x"}}]
    assert "prompt-capability" in rules([*setup(), prompt(10, resource), (A, err(10))])
    link = [{"type": "resource_link", "uri": "file:///a", "name": "a"}]
    assert rules([*setup(), prompt(10, link), (A, err(10))]) == []


def test_prompt_result_message_id():
    """ "The opaque ID of the inserted user message. This field is a required, non-null string; omission and explicit null are invalid." (2. Prompt Accepted)"""
    bad = [*setup(), prompt(), state("running"), (A, ok(10, {"messageId": None})), idle()]
    check("prompt-result-message-id", bad, [*setup(), *turn()])
    assert "prompt-result-message-id" in rules(
        [*setup(), prompt(), state("running"), (A, ok(10, {})), idle()]
    )


def test_prompt_message_id_reused():
    """ "Agents MUST assign distinct message IDs to distinct inserted submissions, even if their content is identical" (2. Prompt Accepted)"""
    bad = [*setup(), *turn(10, "u1"), *turn(11, "u1")]
    check("prompt-message-id-reused", bad, [*setup(), *turn(10, "u1"), *turn(11, "u2")])


def test_user_message_missing():
    """ "The Agent MUST also report the inserted user message through a user_message update with the full content array or streamed user_message_chunk updates." (2. Prompt Accepted)"""
    bad = [*setup(), prompt(), state("running"), (A, ok(10, {"messageId": "u1"})), idle()]
    found = check("user-message-missing", bad, [*setup(), *turn()])
    assert found[0].seq == 8  # the idle that ended the turn
    # "Clients MUST tolerate the updates arriving before or after the response."
    after = [
        *setup(),
        prompt(),
        state("running"),
        (A, ok(10, {"messageId": "u1"})),
        user_message("u1"),
        idle(),
    ]
    assert rules(after) == []
    chunked = [
        *setup(), prompt(), state("running"), (A, ok(10, {"messageId": "u1"})),
        upd({"sessionUpdate": "user_message_chunk", "messageId": "u1", "content": {"type": "text", "text": "h"}}),
        idle(),
    ]  # fmt: skip
    assert rules(chunked) == []
    # the user message of another type does not count: an agent_message with the same id is another entity
    wrong_type = [
        *setup(), prompt(), state("running"), (A, ok(10, {"messageId": "u1"})),
        upd({"sessionUpdate": "agent_message", "messageId": "u1", "content": []}), idle(),
    ]  # fmt: skip
    assert "user-message-missing" in rules(wrong_type)


def test_cancelled_prompt_error():
    """ "If the Agent cancels a prompt request before insertion, it answers that request with -32800" (Cancellation)"""
    cancel = (C, note("session/cancel", {"sessionId": S}))
    bad = [*setup(), prompt(), cancel, (A, err(10, -32603))]
    clean = [*setup(), prompt(), cancel, (A, err(10, -32800))]
    check("cancelled-prompt-error", bad, clean)


# --- Foreground state ---------------------------------------------------------------------


def test_state_missing():
    """state_update "reports foreground work"; its state is required (Session States)."""
    check(
        "state-missing",
        [*setup(), upd({"sessionUpdate": "state_update"})],
        [*setup(), state("idle")],
    )


def test_state_unknown():
    """Custom states begin with _; "Unknown values that do not begin with _ are reserved for future ACP variants." (Session States)"""
    bad = [*setup(), state("thinking"), idle()]
    check("state-unknown", bad, [*setup(), state("_thinking"), idle()])


def test_stop_reason_unknown():
    """ "Custom stop reasons MUST begin with _; unknown non-underscore stop reasons are reserved for future ACP variants." (Stop Reasons)"""
    bad = [*setup(), state("running"), idle("finished")]
    check("stop-reason-unknown", bad, [*setup(), state("running"), idle("_finished")])


def test_stop_reason_malformed_is_lenient():
    """A stop reason of the wrong type is not an unknown one: IdleStateUpdate.stopReason is
    ["string", "null"] with x-deserialize-default-on-error ("a malformed value is treated the
    same way" as none), so one schema-lenient warning and no error from the union's
    branches about the same value."""
    for malformed in (5, {"why": "done"}):
        found = check(
            "schema-lenient",
            [*setup(), state("running"), idle(malformed)],
            [*setup(), state("running"), idle()],
        )
        assert [(f.rule, f.level) for f in found] == [("schema-lenient", Level.WARNING)]
        assert "params.update.stopReason: expected string or null, got" in found[0].message


def test_idle_without_stop_reason():
    """ "When foreground work ends, the Agent MUST report idle ... and SHOULD include the corresponding StopReason" (4. Report Completion)"""
    bad = [*setup(), state("running"), state("idle")]
    check("idle-without-stop-reason", bad, [*setup(), state("running"), idle()])
    # an idle snapshot that ends nothing needs no stop reason
    assert rules([*setup(), state("idle")]) == []


def test_error_beside_stop_reason():
    """ "error belongs to the error stop reason; beside any other stop reason it is an unknown field." (Failures)"""
    bad = [*setup(), state("running"), idle("end_turn", error={"code": 1, "message": "m"})]
    clean = [
        *setup(),
        state("running"),
        idle("error", error={"code": -32000, "message": "Authentication required"}),
    ]
    check("error-beside-stop-reason", bad, clean)


def test_a_wrong_typed_value_is_not_called_missing():
    """A required field of the wrong type is said to be of the wrong type, not missing (the
    same rule, one finding): a messageId, toolCallId, terminalId, plan.planId, a notice's
    title, a usage cost's amount."""
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    notice_ = {"sessionUpdate": "notice", "severity": "info"}
    usage = {"sessionUpdate": "usage_update", "used": 1, "size": 10}
    cases: list[tuple[dict[str, Any], str]] = [
        ({**chunk, "messageId": 5}, "agent_message_chunk with messageId 5, not a string"),
        ({**chunk}, "agent_message_chunk without a messageId"),
        (
            {"sessionUpdate": "tool_call_update", "toolCallId": 5},
            "tool_call_update with toolCallId 5, not a string",
        ),
        (
            {"sessionUpdate": "terminal_update", "terminalId": 5},
            "terminal_update with terminalId 5, not a string",
        ),
        (
            {"sessionUpdate": "plan_update", "plan": {"planId": 5, "type": "items", "entries": []}},
            "plan_update with plan.planId 5, not a string",
        ),
        ({**notice_, "title": 5}, "notice with title 5, not a string"),
        ({**notice_, "title": ""}, "notice with an empty title"),
        ({**notice_}, "notice without a title"),
        (
            {**usage, "cost": {"amount": "1", "currency": "USD"}},
            'usage_update cost {"amount":"1","currency":"USD"}: amount "1", not a number',
        ),
        ({**usage, "cost": {"amount": 1}}, 'usage_update cost {"amount":1}: no currency'),
    ]
    for update, said in cases:
        found = findings([*setup(), upd(update)])
        assert [f.message for f in found] == [said], found
    clean = [upd({**chunk, "messageId": "m"}), upd({**notice_, "title": "T"})]
    assert findings([*setup(), *clean]) == []


def test_lenient_fields_are_the_schemas_warnings():
    """Where the v2 schema marks a field x-deserialize-default-on-error (the SDKs replace it
    with its default when it is malformed) a malformed value is one schema-lenient warning,
    never a hand-written error: idle's error ("Optional and nullable"), a notice's
    description and _meta, a whole message's content (usage_update cost, lenient too, stays
    usage-cost-fields for now: rules.NOT_LENIENT)."""
    text = {"type": "text", "text": "x"}
    notice_ = {"sessionUpdate": "notice", "severity": "info", "title": "T"}
    cases = [
        (idle("error", error={"message": "no code"}), idle("error", error=None)),
        (upd({**notice_, "description": 3}), upd({**notice_, "description": None})),
        (upd({**notice_, "_meta": [1]}), upd({**notice_, "_meta": None})),
        (
            upd({"sessionUpdate": "agent_message", "messageId": "m", "content": text}),
            upd({"sessionUpdate": "agent_message", "messageId": "m", "content": [text]}),
        ),
    ]
    for bad, clean in cases:
        found = check(
            "schema-lenient",
            [*setup(), state("running"), bad],
            [*setup(), state("running"), clean],
            end=False,
        )
        assert {f.rule for f in found} == {"schema-lenient"}, found


def test_idle_without_running():
    """ "The Agent MUST report running when foreground work starts or resumes." (Foreground and Background Work)"""
    bad = [*setup(), prompt(), user_message(), (A, ok(10, {"messageId": "u1"})), idle()]
    check("idle-without-running", bad, [*setup(), *turn()])
    # a prompt rejected before any work needs no state transition
    assert rules([*setup(), prompt(), (A, err(10, -32602))]) == []


def test_turn_still_running():
    """ "When foreground work ends, the Agent MUST report idle" (4. Report Completion)"""
    bad = [*setup(), prompt(), state("running"), user_message(), (A, ok(10, {"messageId": "u1"}))]
    found = check("turn-still-running", bad, [*setup(), *turn()])
    assert found[0].seq == 6  # the running that started it


def test_cancel_ended_with_error():
    """ "Agents MUST catch these errors and report the semantically meaningful cancelled stop reason, not error" (Cancellation)"""
    cancel = (C, note("session/cancel", {"sessionId": S}))
    base = [
        *setup(),
        prompt(),
        state("running"),
        user_message(),
        (A, ok(10, {"messageId": "u1"})),
        cancel,
    ]
    check("cancel-ended-with-error", [*base, idle("error")], [*base, idle("cancelled")])


def test_cancel_ended_without_cancelled():
    """ "the Agent MUST send an idle state_update session update with the cancelled stop reason" (Cancellation)"""
    cancel = (C, note("session/cancel", {"sessionId": S}))
    base = [
        *setup(),
        prompt(),
        state("running"),
        user_message(),
        (A, ok(10, {"messageId": "u1"})),
        cancel,
    ]
    found = check(
        "cancel-ended-without-cancelled", [*base, idle("end_turn")], [*base, idle("cancelled")]
    )
    assert found[0].level == Level.WARNING  # it may have raced the cancel
    # a cancel while idle asks for nothing
    assert rules([*setup(), *turn(), cancel]) == []


def test_update_after_cancelled_idle():
    """ "it MUST ensure that it does so before sending the idle state_update session update that reports cancellation" (Cancellation)"""
    cancel = (C, note("session/cancel", {"sessionId": S}))
    tool = upd({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "in_progress"})
    late = upd({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "cancelled"})
    base = [
        *setup(),
        prompt(),
        state("running"),
        user_message(),
        (A, ok(10, {"messageId": "u1"})),
        tool,
        cancel,
    ]
    check(
        "update-after-cancelled-idle",
        [*base, idle("cancelled"), late],
        [*base, late, idle("cancelled")],
    )


def test_error_idle_unfinished_tools():
    """ "Before reporting the failure, the Agent SHOULD give each tool call that the failed work left unfinished a terminal status" (Failures)"""
    tool = upd(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "t1",
            "title": "Read",
            "status": "pending",
        }
    )
    failed = upd({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "failed"})
    base = [
        *setup(),
        prompt(),
        state("running"),
        user_message(),
        (A, ok(10, {"messageId": "u1"})),
        tool,
    ]
    check("error-idle-unfinished-tools", [*base, idle("error")], [*base, failed, idle("error")])


def test_permission_without_requires_action():
    """ "While foreground work is blocked on a permission response or other user action, the Agent SHOULD report requires_action." (5. Tool Invocation and Status Reporting)"""
    ask = (
        A,
        req(0, "session/request_permission", {"sessionId": S, "title": "Run?", "options": OPTIONS}),
    )
    answer = (C, ok(0, {"outcome": {"outcome": "selected", "optionId": "allow"}}))
    base = [*setup(), prompt(), state("running"), user_message(), (A, ok(10, {"messageId": "u1"}))]
    bad = [*base, ask, answer, idle()]
    clean = [*base, ask, state("requires_action"), answer, state("running"), idle()]
    check("permission-without-requires-action", bad, clean)
    # reported before the request counts too; a request while idle (background) needs nothing
    assert rules([*base, state("requires_action"), ask, answer, state("running"), idle()]) == []
    assert rules([*setup(), ask, answer]) == []


def test_running_not_reported():
    """ "When foreground work resumes, the Agent MUST report running." (5. Tool Invocation and
    Status Reporting); "Resolving a permission request does not itself imply running: the
    Agent MUST report running if foreground work starts or resumes as a result." Output after
    the permission was answered, still in requires_action, is resumed work: a warning (the
    resumption is inferred), once until the next state_update."""
    ask = (
        A,
        req(0, "session/request_permission", {"sessionId": S, "title": "Run?", "options": OPTIONS}),
    )
    answer = (C, ok(0, {"outcome": {"outcome": "selected", "optionId": "allow"}}))
    base = [*setup(), prompt(), state("running"), user_message(), (A, ok(10, {"messageId": "u1"}))]
    said = upd({"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": CHUNK_TEXT})
    bad = [*base, state("requires_action"), ask, answer, said, said, idle()]
    clean = [*base, state("requires_action"), ask, answer, state("running"), said, idle()]
    found = check("running-not-reported", bad, clean)
    assert [f.seq for f in found if f.rule == "running-not-reported"] == [12]
    # blocked, before the answer: output is not resumed work
    assert (
        rules([*base, state("requires_action"), ask, said, answer, state("running"), idle()]) == []
    )


def test_prompt_error_after_insert():
    """ "Once inserted, it MUST NOT return an error response, even if failure or request
    cancellation occurs before the response is sent." (2. Prompt Accepted). A new user
    message while the prompt is the session's one pending prompt is taken as its insertion
    (inferred: a warning)."""
    base = [*setup(), prompt(), state("running"), user_message()]
    bad = [*base, (A, err(10)), idle("error")]
    clean = [*base, (A, ok(10, {"messageId": "u1"})), idle("error")]
    check("prompt-error-after-insert", bad, clean)
    # rejected before any user message: no finding
    assert rules([*setup(), prompt(), (A, err(10))]) == []


def test_user_message_after_rejection():
    """ "If a request is rejected before insertion [...] the Agent MUST return a JSON-RPC error
    response and MUST NOT emit user-message updates for that submission." (Prompts that are
    never inserted). A new user message after the rejection, before another prompt, is taken
    as that submission's (inferred: a warning)."""
    bad = [*setup(), prompt(), (A, err(10)), user_message("u9")]
    clean = [*setup(), prompt(), (A, err(10)), *turn(11)]
    check("user-message-after-rejection", bad, clean)


def test_message_after_cancelled_idle():
    """ "MUST ensure that it does so before sending the idle state_update" (Cancellation): an
    agent message after the idle that ended a cancelled turn, before new work, is late."""
    cancel = (C, note("session/cancel", {"sessionId": S}))
    said = upd({"sessionUpdate": "agent_message_chunk", "messageId": "a", "content": CHUNK_TEXT})
    base = [*setup(), prompt(), state("running"), user_message(), (A, ok(10, {"messageId": "u1"}))]
    found = check(
        "update-after-cancelled-idle",
        [*base, cancel, idle("cancelled"), said, said],
        [*base, said, cancel, idle("cancelled"), state("running"), said, idle()],
    )
    assert [f.rule for f in found] == ["update-after-cancelled-idle"]


def test_dollar_cancel_request_on_v2():
    """$/cancel_request is a protocol-level notification either side may send (v1 and v2): one
    naming a request its sender has not outstanding is flagged on v2 as on v1."""
    unknown = (C, note("$/cancel_request", {"requestId": 99}))
    check("cancel-request-unknown", [*setup(), unknown], [*setup()])


def test_one_defect_is_one_finding():
    """A defect is said once, by the more specific rule: a sessionId that is not a string is
    the schema's (not also an unknown session), an update that is not an object is the
    schema's (not an unknown variant), a session method before initialize is
    before-initialize (no session exists yet), a session/cancel sent with an id is
    cancel-with-id (not also a request left unanswered). Both versions."""
    for version in (1, 2):
        text = {"type": "text", "text": "x"}
        chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": text}
        integer = [*setup(version), (A, note("session/update", {"sessionId": 7, "update": chunk}))]
        found = findings(integer)
        assert [(f.rule, f.message) for f in found] == [
            ("schema", "session/update params.sessionId: expected string, got integer (SessionId)")
        ]
        array = [*setup(version), (A, note("session/update", {"sessionId": S, "update": [1]}))]
        assert [(f.rule, f.message) for f in findings(array)] == [
            ("schema", "session/update params.update: expected object, got array (SessionUpdate)")
        ]
        cancel = [*setup(version), (C, req(9, "session/cancel", {"sessionId": S}))]
        assert rules(cancel) == ["cancel-with-id"]
    early = [prompt(1), (A, err(1))]
    assert rules(early) == ["before-initialize"]
    # the clean twins: a string sessionId this connection created, an object update
    assert rules([*setup(), upd(chunk)]) == []
    assert rules([*setup(), (C, note("session/cancel", {"sessionId": S}))]) == []


# --- Cancellation ----------------------------------------------------------------------------


def test_cancel_with_id():
    """ "Clients MAY cancel active session work at any time by sending a session/cancel notification" (Cancellation)"""
    bad = [*setup(), (C, req(9, "session/cancel", {"sessionId": S})), (A, ok(9, None))]
    check("cancel-with-id", bad, [*setup(), (C, note("session/cancel", {"sessionId": S}))])


def test_permission_not_cancelled():
    """ "The Client MUST respond to all pending session/request_permission requests with the cancelled outcome." (Cancellation)"""
    ask = (
        A,
        req(0, "session/request_permission", {"sessionId": S, "title": "Run?", "options": OPTIONS}),
    )
    cancel = (C, note("session/cancel", {"sessionId": S}))
    base = [
        *setup(),
        prompt(),
        state("running"),
        user_message(),
        (A, ok(10, {"messageId": "u1"})),
        state("requires_action"),
        ask,
        cancel,
    ]
    bad = [
        *base,
        (C, ok(0, {"outcome": {"outcome": "selected", "optionId": "allow"}})),
        idle("cancelled"),
    ]
    clean = [*base, (C, ok(0, {"outcome": {"outcome": "cancelled"}})), idle("cancelled")]
    check("permission-not-cancelled", bad, clean)


def test_permission_unanswered():
    """ "The Client MUST respond to all pending session/request_permission requests" (Cancellation)"""
    ask = (
        A,
        req(0, "session/request_permission", {"sessionId": S, "title": "Run?", "options": OPTIONS}),
    )
    found = check(
        "permission-unanswered",
        [*setup(), ask],
        [*setup(), ask, (C, ok(0, {"outcome": {"outcome": "cancelled"}}))],
    )
    assert "unanswered-request" not in [f.rule for f in found]


# --- Entities ---------------------------------------------------------------------------------


def test_message_id_missing():
    """ "The Agent MUST include an opaque messageId on message updates and message chunks." (Message IDs)"""
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    check(
        "message-id-missing", [*setup(), upd(chunk)], [*setup(), upd({**chunk, "messageId": "m"})]
    )


def test_message_content_shape():
    """ "concrete content arrays replace the previous content"; a chunk "appends its content" (Message IDs)"""
    bad = [
        *setup(),
        upd({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": "Hi"}),
    ]
    clean = [
        *setup(),
        upd({"sessionUpdate": "agent_message", "messageId": "m", "content": None}),
        upd({"sessionUpdate": "agent_message", "messageId": "m"}),
        upd(
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": "m",
                "content": {"type": "text", "text": "x"},
            }
        ),
    ]
    check("message-content-shape", bad, clean)
    chunk_list = upd(
        {
            "sessionUpdate": "agent_thought_chunk",
            "messageId": "m",
            "content": [{"type": "text", "text": "x"}],
        }
    )
    assert rules([*setup(), chunk_list]) == ["message-content-shape"]


def test_tool_call_id_missing():
    """ "Messages, tool calls, terminals, and plans are entities that the Agent creates and then updates by ID" (Entity IDs)"""
    bad = [*setup(), upd({"sessionUpdate": "tool_call_update", "status": "pending"})]
    check(
        "tool-call-id-missing",
        bad,
        [
            *setup(),
            upd({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "pending"}),
        ],
    )


def test_terminal_id_missing():
    """Terminals are identified by terminalId (Entity IDs)."""
    bad = [*setup(), upd({"sessionUpdate": "terminal_output_chunk", "data": "aGk="})]
    check(
        "terminal-id-missing",
        bad,
        [
            *setup(),
            upd({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "aGk="}),
        ],
    )


def test_terminal_data_not_base64():
    """ACP schema: terminal_output_chunk data is "Independently base64-encoded terminal output bytes"."""
    bad = [
        *setup(),
        upd({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "not base64!"}),
    ]
    check(
        "terminal-data-not-base64",
        bad,
        [
            *setup(),
            upd({"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "aGk="}),
        ],
    )


def test_plan_id_missing():
    """Plans are identified by planId (Entity IDs); plan_update "carries its ID inside plan"."""
    entries = [{"content": "x", "priority": "high", "status": "pending"}]
    bad = [
        *setup(),
        upd({"sessionUpdate": "plan_update", "plan": {"type": "items", "entries": entries}}),
    ]
    clean = [
        *setup(),
        upd(
            {
                "sessionUpdate": "plan_update",
                "plan": {"type": "items", "planId": "p", "entries": entries},
            }
        ),
    ]
    check("plan-id-missing", bad, clean)


def test_unknown_update():
    """ "The protocol also supports custom and future variants." Custom ones begin with _ (Session Updates)."""
    check(
        "unknown-update",
        [*setup(), upd({"sessionUpdate": "mood_update"})],
        [*setup(), upd({"sessionUpdate": "_mood_update"})],
    )


def test_same_id_on_entities_of_different_types_is_legal():
    """ "the same string can identify one entity of each type" (Entity IDs)"""
    same = [
        *setup(),
        upd(
            {
                "sessionUpdate": "agent_thought",
                "messageId": "x",
                "content": [{"type": "text", "text": "t"}],
            }
        ),
        upd(
            {
                "sessionUpdate": "agent_message",
                "messageId": "x",
                "content": [{"type": "text", "text": "m"}],
            }
        ),
        upd({"sessionUpdate": "tool_call_update", "toolCallId": "x", "status": "pending"}),
        upd({"sessionUpdate": "terminal_update", "terminalId": "x"}),
        upd(
            {
                "sessionUpdate": "plan_update",
                "plan": {"type": "items", "planId": "x", "entries": []},
            }
        ),
    ]
    assert rules(same) == []


# --- Notices, compaction, usage ------------------------------------------------------------------


def notice(**fields: Any) -> tuple[str, dict[str, Any]]:
    return upd({"sessionUpdate": "notice", **fields})


def test_notice_severity_missing():
    """ "severity is required and non-null" (Session Notices)"""
    check(
        "notice-severity-missing",
        [*setup(), notice(title="T")],
        [*setup(), notice(severity="info", title="T")],
    )


def test_notice_title_missing():
    """ "title is required, non-null, non-empty plain text" (Session Notices)"""
    check(
        "notice-title-missing",
        [*setup(), notice(severity="info", title="")],
        [*setup(), notice(severity="info", title="T")],
    )
    assert rules([*setup(), notice(severity="info", title=None)]) == ["notice-title-missing"]


def test_notice_severity_unknown():
    """ "values beginning with _ are reserved for implementation-specific extensions, while other unknown values are reserved for future ACP severities" (Session Notices)"""
    check(
        "notice-severity-unknown",
        [*setup(), notice(severity="loud", title="T")],
        [*setup(), notice(severity="_loud", title="T")],
    )


def test_notice_during_replay():
    """Each notice "is an independent live event, not conversation history, and SHOULD NOT be included in session replay." (Session Notices)"""
    resume = (
        C,
        req(4, "session/resume", {"sessionId": S, "cwd": "/", "replayFrom": {"type": "start"}}),
    )
    replayed = notice(severity="info", title="T")
    done = [state("idle"), (A, ok(4, {}))]
    check(
        "notice-during-replay",
        [*setup(), resume, replayed, *done],
        [*setup(), resume, *done, replayed],
    )


def compaction(**fields: Any) -> tuple[str, dict[str, Any]]:
    return upd({"sessionUpdate": "compaction_update", **fields})


def summary_chunk(compaction_id: str = "c1") -> tuple[str, dict[str, Any]]:
    return upd(
        {
            "sessionUpdate": "compaction_summary_chunk",
            "compactionId": compaction_id,
            "content": {"type": "text", "text": "s"},
        }
    )


def test_compaction_field_missing():
    """ "compactionId and status are required and non-null on every compaction_update." (Session Compaction)"""
    check(
        "compaction-field-missing",
        [*setup(), compaction(compactionId="c1")],
        [*setup(), compaction(compactionId="c1", status="completed")],
    )
    chunk = upd({"sessionUpdate": "compaction_summary_chunk", "compactionId": "c1"})
    assert rules([*setup(), chunk]) == ["compaction-field-missing"]


def test_compaction_status_unknown():
    """ "status is an open string enum. Values beginning with _ are reserved for implementation-specific extensions" (Session Compaction)"""
    check(
        "compaction-status-unknown",
        [*setup(), compaction(compactionId="c1", status="paused")],
        [*setup(), compaction(compactionId="c1", status="_paused")],
    )


def test_compaction_id_reused():
    """ "The ID is an opaque, Agent-owned string, unique within the session, and MUST NOT be reused for another compaction." (Session Compaction)"""
    first = [
        compaction(compactionId="c1", status="in_progress"),
        compaction(compactionId="c1", status="completed"),
    ]
    bad = [*setup(), *first, compaction(compactionId="c1", status="in_progress")]
    clean = [
        *setup(),
        *first,
        compaction(compactionId="c2", status="in_progress"),
        compaction(compactionId="c2", status="completed"),
    ]
    check("compaction-id-reused", bad, clean)
    # a later update patches the ended entity in place: not a reuse
    patch = compaction(compactionId="c1", status="completed", summary=[])
    assert rules([*setup(), *first, patch]) == []


def test_compaction_chunk_outside_progress():
    """ "Chunks append to the current summary" of a compaction in progress (Session Compaction)"""
    bad = [*setup(), compaction(compactionId="c1", status="completed"), summary_chunk()]
    clean = [
        *setup(),
        compaction(compactionId="c1", status="in_progress"),
        summary_chunk(),
        compaction(compactionId="c1", status="completed"),
    ]
    check("compaction-chunk-outside-progress", bad, clean)


def test_compaction_unfinished():
    """ "The Agent MUST report a terminal status when a reported compaction ends." (Session Compaction)"""
    bad = [*setup(), compaction(compactionId="c1", status="in_progress")]
    check(
        "compaction-unfinished",
        bad,
        [*bad, compaction(compactionId="c1", status="failed", error="boom")],
    )


def test_usage_fields():
    """ "used and size are required and non-null token counts for the current session context." (Session Usage Updates)"""
    check(
        "usage-fields",
        [*setup(), upd({"sessionUpdate": "usage_update", "used": -1, "size": 10})],
        [*setup(), upd({"sessionUpdate": "usage_update", "used": 0, "size": 10})],
    )
    assert rules([*setup(), upd({"sessionUpdate": "usage_update", "used": 1})]) == ["usage-fields"]


def test_usage_cost_fields():
    """ "cost is optional and, if present, amount and currency are required." (Session Usage Updates)"""
    base = {"sessionUpdate": "usage_update", "used": 1, "size": 10}
    bad = [*setup(), upd({**base, "cost": {"amount": 0.5}})]
    check(
        "usage-cost-fields",
        bad,
        [*setup(), upd({**base, "cost": {"amount": 0.5, "currency": "USD"}})],
    )


# --- The whole ------------------------------------------------------------------------------------


def test_validator_error():
    """A bug in a rule is reported as a finding, never raised: the frame is still relayed."""
    validator = Validator()
    for seq, (side, message) in enumerate(setup(), 1):
        validator.feed(side, parse_frame(orjson.dumps(message)), seq)
    validator._sessions = None  # type: ignore[assignment]  # sabotage its state
    found = validator.feed(
        A, parse_frame(orjson.dumps(note("session/update", {"sessionId": S}))), 5
    )
    assert [f.rule for f in found] == ["validator-error"]
    assert found[0].seq == 5


def test_every_rule_has_a_test():
    """Every rule in the catalog is exercised by a test of its own name here."""
    modules = [
        sys.modules[__name__],
        importlib.import_module("tests.core.test_validator_v1"),
        importlib.import_module("tests.core.test_unstable"),
    ]
    missing = [
        r.id
        for r in CATALOG
        if not any(hasattr(m, "test_" + r.id.replace("-", "_")) for m in modules)
    ]
    assert missing == []


def test_catalog_levels_and_sources():
    """Rule ids are stable kebab-case; every rule has a level, a source and a description."""
    for rule in CATALOG:
        assert rule.id == rule.id.lower() and " " not in rule.id and "_" not in rule.id
        assert rule.level in (Level.ERROR, Level.WARNING, Level.INFO)
        assert rule.spec and rule.description.endswith(".")
    assert len(RULES) == len(CATALOG)


def test_v2_rules_never_fire_on_v1_traffic():
    """A v1 session/prompt result is {stopReason}, and that is correct there."""
    v1 = [
        *setup(1),
        prompt(),
        upd({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}),
        # completed: a pending call at end_turn is a v1 warning of its own
        upd(
            {
                "sessionUpdate": "tool_call",
                "toolCallId": "t",
                "title": "Read",
                "status": "completed",
            }
        ),
        upd({"sessionUpdate": "plan", "entries": []}),
        (A, ok(10, {"stopReason": "end_turn"})),
    ]
    assert rules(v1) == []
    # the JSON-RPC and session rules still apply
    assert rules([*v1, (A, ok(10, {}))]) == ["unexpected-response"]
    assert RULES["unexpected-response"].scope is Scope.ALL


def test_memory_does_not_grow_with_finished_work():
    """Answered requests and ended turns are dropped: state stays bounded."""
    validator = Validator()
    frames = setup()
    for i in range(300):
        frames += turn(100 + i, f"u{i}")
    for seq, (side, message) in enumerate(frames, 1):
        assert validator.feed(side, parse_frame(orjson.dumps(message)), seq) == []
    assert not validator.wire.pending and validator._notes == {}
    session = validator._sessions[S]
    assert session.tools == {} and session.owed_user_messages == {}
    assert len(validator.wire._answered) <= 256 and len(session.user_messages) <= 256


_json = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.text(max_size=8)
    | st.sampled_from(
        [
            "session/update",
            "session/prompt",
            "initialize",
            "session/new",
            "session/cancel",
            S,
            "state_update",
            "idle",
            "running",
            "notice",
            "error",
            "2.0",
            "result",
            "method",
            "sessionUpdate",
            "messageId",
        ]
    ),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(
                [
                    "jsonrpc",
                    "id",
                    "method",
                    "params",
                    "result",
                    "error",
                    "sessionId",
                    "update",
                    "sessionUpdate",
                    "state",
                    "stopReason",
                    "messageId",
                    "toolCallId",
                    "content",
                    "protocolVersion",
                    "code",
                    "message",
                    "prompt",
                    "status",
                    "plan",
                    "cost",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([C, A]), _json | st.binary(max_size=10)), max_size=12))
def test_the_validator_never_raises(frames):
    """Whatever the traffic, the validator returns findings and never fails."""
    validator = Validator()
    for seq, (side, message) in enumerate([*setup(), *frames], 1):
        raw = message if isinstance(message, bytes) else orjson.dumps(message)
        for finding in validator.feed(side, parse_frame(raw.replace(b"\n", b" ")), seq):
            assert finding.rule != "validator-error", finding
            assert finding.rule in RULES
    for finding in validator.end():
        assert finding.rule in RULES


# --- shapes: the official schema of the negotiated version ------------------------------


def messages(found: list[Violation]) -> list[str]:
    return [f"{f.rule}: {f.message}" for f in found]


def test_schema():
    """The official schema of the negotiated version: a required field missing or a field of
    the wrong JSON type is an error, named by its path."""
    permission = {
        "sessionId": S,
        "toolCall": {"toolCallId": "t1"},
        "options": [{"optionId": "a", "name": "Allow"}],
    }
    bad_v1 = [
        *setup(1),
        prompt(),
        (A, ok(10, {})),
        (A, req(7, "session/request_permission", permission)),
    ]
    assert messages(findings(bad_v1, end=False)) == [
        "schema: session/prompt result.stopReason: required field missing (PromptResponse)",
        "schema: session/request_permission params.options[0].kind: required field missing "
        "(PermissionOption)",
    ]
    string_version = [(C, req(0, "initialize", {"protocolVersion": "1"}))]
    assert messages(findings(string_version, end=False)) == [
        "schema: initialize params.protocolVersion: expected integer, got string (ProtocolVersion)"
    ]
    chunk = upd({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t"})
    found = findings([*setup(), chunk])
    assert messages(found) == [
        "schema: session/update params.update.content: required field missing "
        "(ToolCallContentChunk)"
    ]
    assert found[0].spec == f"ACP v2 schema {TAG_V2}" and found[0].seq == 5
    clean_chunk = upd(
        {
            "sessionUpdate": "tool_call_content_chunk",
            "toolCallId": "t",
            "content": {"type": "content", "content": {"type": "text", "text": "x"}},
        }
    )
    assert rules([*setup(), clean_chunk]) == []
    assert rules([*setup(1), prompt(), (A, ok(10, {"stopReason": "end_turn"}))]) == []


def test_schema_checks_by_negotiated_version():
    """Before initialize completes, the version the client asked for; then the negotiated one.
    A v2 initialize needs info; a v1 one does not."""
    v2_init = [(C, req(0, "initialize", {"protocolVersion": 2, "capabilities": {}}))]
    assert messages(findings(v2_init, end=False)) == [
        "schema: initialize params.info: required field missing (InitializeRequest)"
    ]
    v1_init = [(C, req(0, "initialize", {"protocolVersion": 1, "clientCapabilities": {}}))]
    assert rules(v1_init, end=False) == []
    # v1 docs show `"result": null` for empty results: accepted where {} would be valid
    mode = (C, req(3, "session/set_mode", {"sessionId": S, "modeId": "m"}))
    assert rules([*setup(1), mode, (A, ok(3, None))]) == []
    assert rules([*setup(1), prompt(), (A, ok(10, None))]) == ["schema"]


def test_schema_lenient():
    """A field marked x-deserialize-default-on-error is one the SDKs replace with its default
    when it is malformed: a warning, not an error; so is a _meta that is not an object."""
    found = check(
        "schema-lenient",
        [*setup(), *turn()[:-1], idle("end_turn", _meta="x")],
        [*setup(), *turn()[:-1], idle("end_turn", _meta={"a": 1})],
    )
    assert found[-1].level == Level.WARNING
    assert found[-1].message == (
        "session/update params.update._meta: expected object or null, got string (IdleStateUpdate)"
    )


def test_schema_reserved():
    """An unknown value where the schema has a catch-all variant is reserved for future ACP
    versions: at most a warning. A _-prefixed value is an extension: never flagged."""
    chunk = {"type": "content", "content": {"type": "text", "text": "x"}}

    def status(value: str) -> Frames:
        return [
            *setup(),
            upd({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": value}),
            upd({"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t", "content": chunk}),
        ]

    found = check("schema-reserved", status("teleported"), status("_teleported"))
    assert messages(found) == [
        'schema-reserved: session/update params.update.status: "teleported" is not in ACP v2 '
        f"schema {TAG_V2} (the unstable schema does not define it either; a newer schema "
        "may) (ToolCallStatus)"
    ]
    # v1's ToolCallStatus has no catch-all: the same kind of value is not in the schema there
    announce = upd({"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read"})
    cancelled = upd({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "cancelled"})
    v1 = findings([*setup(1), announce, cancelled])
    assert [f.rule for f in v1] == ["not-in-schema"]


def test_unknown_values_are_said_once_per_place_and_value_per_connection():
    """What the shipped schemas do not define where ACP extends is one warning per place and
    value per connection, whichever rule says it (not-in-schema, schema-reserved, a
    hand-written rule, unknown-method): the second frame with the same value says nothing;
    another value is said again. Each names the schema's tag."""
    tool = {"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": "x"}
    chunk = {"sessionUpdate": "agent_message_chunk", "messageId": "m"}

    def frames(kind: str, block: str, method: str, value: str) -> Frames:
        once = [
            upd({**tool, "kind": kind}),
            upd({**chunk, "content": {"type": block, "text": "x"}}),
            (A, note(method, {"sessionId": S})),
            upd({"sessionUpdate": value}),
            upd({"sessionUpdate": "notice", "severity": value, "title": "t"}),
            upd({"sessionUpdate": "compaction_update", "compactionId": "c", "status": value}),
            state(value),
            idle(value),
        ]
        return [*setup(), *once, *once]

    clean = frames("read", "text", "_suggest", "_paused")
    assert findings(clean) == []
    found = findings(frames("browse", "video", "session/suggest", "paused"))
    assert [f.rule for f in found] == [
        "schema-reserved",
        "schema-reserved",
        "unknown-method",
        "unknown-update",
        "notice-severity-unknown",
        "compaction-status-unknown",
        "state-unknown",
        "stop-reason-unknown",
    ]
    assert all(f.seq is not None and f.seq <= 12 for f in found)  # all from the first round
    assert all(f"ACP v2 schema {TAG_V2}" in f.message for f in found)
    # another value is another warning
    again = [*setup(), state("paused"), state("waiting"), state("paused")]
    assert [f.seq for f in findings(again) if f.rule == "state-unknown"] == [5, 6]
    # v1: a newer method is said once too
    v1 = [*setup(1), (A, note("session/suggest", {"sessionId": S}))]
    v1 += [(A, note("session/suggest", {"sessionId": S}))]
    assert rules(v1) == ["unknown-method"]


NOTE_V1 = (
    f"is not in ACP v1 schema {TAG_V1} (the unstable schema does not define it either; a newer "
    "schema may)"
)


def test_not_in_schema():
    """Known, unknown, broken: what the shipped schemas do not define where ACP extends (a
    variant, a content block type, an enum value, a field) is a warning naming the schema's
    tag; the broken twin beside each is an error at its frame."""
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}
    tool = {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read", "kind": "read"}
    entry = {"content": "a", "priority": "high", "status": "pending"}
    twins = [  # (unknown, broken, clean)
        (
            upd({"sessionUpdate": "prompt_suggestions", "suggestions": ["Go on"]}),
            upd({"suggestions": ["Go on"]}),  # no sessionUpdate
            upd(chunk),
        ),
        (
            upd({**chunk, "sessionUpdate": "prompt_suggestions"}),
            upd({**chunk, "sessionUpdate": 7}),
            upd(chunk),
        ),
        (upd({**tool, "kind": "teleport"}), upd({**tool, "title": 5}), upd(tool)),
        (
            upd({**chunk, "content": {"type": "hologram", "hz": 60}}),
            upd({**chunk, "content": {"type": "text"}}),  # a known type without its text
            upd(chunk),
        ),
        (
            upd({"sessionUpdate": "plan", "entries": [{**entry, "path": "/a"}]}),
            upd({"sessionUpdate": "plan"}),  # a known variant without its entries
            upd({"sessionUpdate": "plan", "entries": [entry]}),
        ),
    ]
    for unknown, broken, clean in twins:
        (found,) = check("not-in-schema", [*setup(1), unknown], [*setup(1), clean])
        assert (
            found.seq == 5 and NOTE_V1 in found.message and found.spec == f"ACP v1 schema {TAG_V1}"
        )
        assert [(f.rule, f.level, f.seq) for f in findings([*setup(1), broken])] == [
            ("schema", "error", 5)
        ]
    (variant,) = findings([*setup(1), twins[0][0]])
    assert variant.message == (
        f'session/update params.update.sessionUpdate: "prompt_suggestions" {NOTE_V1} (SessionUpdate)'
    )
    (field,) = findings([*setup(1), twins[4][0]])
    assert field.message == (
        f'session/update params.update.entries[0]: field "path" {NOTE_V1} (PlanEntry)'
    )
    # an enum value: a stop reason v1 does not list; its broken twin is not a string
    stop = findings([*setup(1), prompt(), (A, ok(10, {"stopReason": "paused"}))])
    assert [(f.rule, f.level, f.seq) for f in stop] == [("not-in-schema", "warning", 6)]
    wrong = findings([*setup(1), prompt(), (A, ok(10, {"stopReason": 3}))])
    assert [(f.rule, f.level) for f in wrong] == [("schema", "error")]
    # a method neither v1 schema defines: a warning naming the tag; a _-prefixed one is custom
    (method,) = check(
        "unknown-method",
        [*setup(1), (C, note("session/options", {"sessionId": S}))],
        [*setup(1), (C, note("_session/options", {"sessionId": S}))],
    )
    assert NOTE_V1[:-1] in method.message
    # an update naming a session that does not exist stays an error, known variant or not
    elsewhere = upd(chunk, session="nobody")
    assert ("unknown-session", "error") in [
        (f.rule, f.level) for f in findings([*setup(1), elsewhere])
    ]
    # once per place and value per connection: a stream of chunks with a newer field is one
    # warning (the short way for chunks finds the same: findings() checks both ways)
    newer = {**chunk, "speed": "fast", "tempo": 2}
    stream = [upd({**newer, "content": {"type": "text", "text": t}}) for t in "abcd"]
    streamed = findings([*setup(1), *stream])
    assert [(f.rule, f.seq) for f in streamed] == [("not-in-schema", 5)]
    assert 'params.update: fields "speed", "tempo" are not in ACP v1' in streamed[0].message
    # v2: an unknown variant is unknown-update (Session Updates), naming v2's tag
    (v2,) = check(
        "unknown-update", [*setup(), upd({"sessionUpdate": "prompt_suggestions"})], setup()
    )
    assert v2.message == (
        f'sessionUpdate "prompt_suggestions" is not in ACP v2 schema {TAG_V2} (the unstable '
        "schema does not define it either; a newer schema may)"
    )


def test_a_newer_schema_silences_what_it_defines(monkeypatch):
    """Updating the schemas is copying files: a schema that adds a variant (here a modified
    copy of the shipped one, as a newer release would be) turns that variant's warning into
    silence, with no change to the code; its fields are then checked."""
    from acp_proxy.core import schema as schema_module
    from acp_proxy.core import unstable as unstable_module
    from acp_proxy.core.protocol import official_schema

    def newer(version: int, unstable: bool = False) -> dict[str, Any]:
        document = orjson.loads(orjson.dumps(official_schema(version, unstable)))
        union = document["$defs"]["SessionUpdate"]
        branches = union.get("anyOf") or union["oneOf"]
        tag = {"type": "string", "const": "prompt_suggestions"}
        added = {
            "type": "object",
            "properties": {
                "sessionUpdate": tag,
                "suggestions": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["sessionUpdate", "suggestions"],
        }
        branches.insert(0, added)
        guard = {"properties": {"sessionUpdate": tag}}
        for branch in branches:  # a catch-all (v2) lists the known variants it is not
            if "not" in branch:
                branch["not"]["anyOf"].append({**guard, "required": ["sessionUpdate"]})
        return document

    suggestion = {"sessionUpdate": "prompt_suggestions", "suggestions": ["Go on"]}
    broken = {"sessionUpdate": "prompt_suggestions", "suggestions": "Go on"}
    assert rules([*setup(1), upd(suggestion)]) == ["not-in-schema"]
    assert rules([*setup(), upd(suggestion)]) == ["unknown-update"]
    monkeypatch.setattr(schema_module, "official_schema", newer)
    monkeypatch.setattr(unstable_module, "official_schema", newer)
    schema_module.schema_for.cache_clear()
    unstable_module.surface_for.cache_clear()
    try:
        assert rules([*setup(1), upd(suggestion)]) == []
        assert rules([*setup(), upd(suggestion)]) == []
        assert rules([*setup(1), upd(broken)]) == ["schema"]  # known now: checked
    finally:
        schema_module.schema_for.cache_clear()
        unstable_module.surface_for.cache_clear()


def test_schema_findings_do_not_repeat_hand_written_rules():
    """One finding per defect: where a hand-written rule reports the same defect on the same
    frame, only the more specific rule is reported."""
    chunk = upd({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}})
    assert rules([*setup(), chunk]) == ["message-id-missing"]
    usage = upd({"sessionUpdate": "usage_update", "used": -1, "size": "big"})
    assert rules([*setup(), usage]) == ["usage-fields", "usage-fields"]
    error = (A, {"jsonrpc": "2.0", "id": 1, "error": {"code": "x"}})
    assert rules([(C, req(1, "_x")), error]) == ["invalid-error-object"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([1, 2]), st.lists(chunk_frames(), min_size=1, max_size=12))
def test_chunks_known_by_their_bytes_are_found_what_the_long_way_finds(
    version: int, chunks: list[bytes]
) -> None:
    """The short way knows a chunk that is a checked one around another text by its bytes
    (acp_proxy.core.chunks) and skips the shape checks; `findings` compares every finding with
    the long way's, which checks each frame in full."""
    frames: Frames = [*setup(version), prompt()]
    if version == 2:
        frames += [state("running"), user_message()]
    frames += [(A, raw) for raw in chunks]
    found = findings(frames, end=False)
    assert all(f.seq is not None and f.seq > len(frames) - len(chunks) for f in found)
