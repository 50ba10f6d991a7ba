"""The conversation model, rule by rule from the spec's own examples."""

from __future__ import annotations

from typing import Any

import click
import orjson

from acp_proxy.core.framing import parse_frame
from acp_proxy.readers.conversation import Conversation

S = "s1"
T = "2026-11-29T20:00:00.000000Z"


def build(
    *updates: dict[str, Any], frames: list[tuple[str, dict[str, Any]]] | None = None
) -> Conversation:
    model = Conversation()
    messages = frames or []
    messages += [
        (
            "agent",
            {"jsonrpc": "2.0", "method": "session/update", "params": {"sessionId": S, "update": u}},
        )
        for u in updates
    ]
    for seq, (side, message) in enumerate(messages, 1):
        model.feed(side, parse_frame(orjson.dumps(message)), seq, T)
    return model


def text(value: str) -> dict[str, str]:
    return {"type": "text", "text": value}


def content(model: Conversation, kind: str, entity_id: str) -> list[Any]:
    return model.sessions[S].entities[(kind, entity_id)].content


def test_message_update_then_chunk_then_update_then_chunk():
    """ "if an Agent sends agent_message with content: [A], then sends agent_message_chunk with B,
    the rendered message content is [A, B]. If it later sends another agent_message with
    content: [C], the rendered content becomes [C] ... Subsequent chunks append to [C].\""""
    a, b, c, d = text("A"), text("B"), text("C"), text("D")
    steps: list[dict[str, Any]] = [
        {"sessionUpdate": "agent_message", "messageId": "m", "content": [a]},
        {"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": b},
    ]
    assert content(build(*steps), "agent message", "m") == [a, b]
    steps.append({"sessionUpdate": "agent_message", "messageId": "m", "content": [c]})
    assert content(build(*steps), "agent message", "m") == [c]
    steps.append({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": d})
    assert content(build(*steps), "agent message", "m") == [c, d]


def test_same_id_on_a_thought_and_a_message_stays_two_entities():
    """ "an agent_thought whose messageId matches an existing Agent message creates or updates a
    thought and leaves the message unchanged.\""""
    model = build(
        {"sessionUpdate": "agent_message", "messageId": "x", "content": [text("answer")]},
        {"sessionUpdate": "agent_thought", "messageId": "x", "content": [text("thinking")]},
    )
    assert content(model, "agent message", "x") == [text("answer")]
    assert content(model, "agent thought", "x") == [text("thinking")]


def test_null_and_empty_content_clear_and_omitted_content_keeps():
    """ "omitted content leaves the existing message content unchanged, content: null clears it"
    and "content: [] or content: null clears the message content.\""""
    first = {"sessionUpdate": "user_message", "messageId": "u", "content": [text("hi")]}
    assert content(
        build(first, {"sessionUpdate": "user_message", "messageId": "u"}), "user message", "u"
    ) == [text("hi")]
    assert (
        content(
            build(first, {"sessionUpdate": "user_message", "messageId": "u", "content": None}),
            "user message",
            "u",
        )
        == []
    )
    assert (
        content(
            build(first, {"sessionUpdate": "user_message", "messageId": "u", "content": []}),
            "user message",
            "u",
        )
        == []
    )


def test_tool_calls_are_upserted_and_their_content_chunks_appended():
    """ "Clients append each tool_call_content_chunk to the current content for that toolCallId.
    A later tool_call_update with content replaces the accumulated content.\""""
    chunk = {"type": "content", "content": text("part")}
    final = {"type": "content", "content": text("done")}
    model = build(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "t",
            "title": "Read",
            "kind": "read",
            "status": "pending",
        },
        {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "in_progress"},
        {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t", "content": chunk},
        {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t", "content": chunk},
    )
    tool = model.sessions[S].entities[("tool call", "t")]
    assert tool.fields == {"title": "Read", "kind": "read", "status": "in_progress"}
    assert tool.content == [chunk, chunk]
    model = build(
        {"sessionUpdate": "tool_call_content_chunk", "toolCallId": "t", "content": chunk},
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "t",
            "status": "completed",
            "content": [final],
        },
        {"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": None},
    )
    tool = model.sessions[S].entities[("tool call", "t")]
    assert tool.content == [final] and tool.fields == {"status": "completed"}


def test_plans_are_replaced_by_plan_id():
    """plan_update "Creates or updates the content of a plan identified by ID.\""""
    one = [{"content": "a", "priority": "high", "status": "pending"}]
    two = [
        {"content": "a", "priority": "high", "status": "completed"},
        {"content": "b", "priority": "low", "status": "pending"},
    ]
    model = build(
        {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p", "entries": one}},
        {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "p", "entries": two}},
        {"sessionUpdate": "plan_update", "plan": {"type": "items", "planId": "q", "entries": one}},
    )
    entities = model.sessions[S].entities
    assert entities[("plan", "p")].fields["entries"] == two
    assert entities[("plan", "q")].fields["entries"] == one


def test_terminal_output_snapshots_replace_and_chunks_append_each_decoded_alone():
    """terminal_output_chunk data is "Independently base64-encoded terminal output bytes"."""
    model = build(
        {
            "sessionUpdate": "terminal_update",
            "terminalId": "t",
            "command": "ls",
            "output": {"data": "b2xk"},
        },
        {"sessionUpdate": "terminal_update", "terminalId": "t", "output": {"data": "aGk="}},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "IQ=="},
        {"sessionUpdate": "terminal_output_chunk", "terminalId": "t", "data": "Pw=="},
    )
    terminal = model.sessions[S].entities[("terminal", "t")]
    assert bytes(terminal.output) == b"hi!?"  # "aGk=IQ==Pw==" would not decode as one string
    assert terminal.fields["command"] == "ls"


def test_compactions_start_in_progress_and_keep_their_summary_rules():
    """ "Clients initialize a first-seen compaction ID with status in_progress"; "Chunks append to
    the current summary; a concrete summary replaces all previously accumulated content".\""""
    model = build(
        {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c", "content": text("a")},
        {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c", "content": text("b")},
    )
    compaction = model.sessions[S].entities[("compaction", "c")]
    assert compaction.fields["status"] == "in_progress" and compaction.content == [
        text("a"),
        text("b"),
    ]
    model = build(
        {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c", "content": text("a")},
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "c",
            "status": "completed",
            "summary": [text("s")],
        },
        {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c", "content": text("t")},
    )
    compaction = model.sessions[S].entities[("compaction", "c")]
    assert compaction.fields["status"] == "completed" and compaction.content == [
        text("s"),
        text("t"),
    ]
    cleared = build(
        {"sessionUpdate": "compaction_summary_chunk", "compactionId": "c", "content": text("a")},
        {
            "sessionUpdate": "compaction_update",
            "compactionId": "c",
            "status": "failed",
            "summary": None,
        },
    )
    assert cleared.sessions[S].entities[("compaction", "c")].content == []


def test_turns_states_stop_reasons_usage_and_unknown_variants():
    """A turn runs from the prompt to idle; usage is kept; unknown variants are listed, not dropped."""
    prompt = (
        "client",
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/prompt",
            "params": {"sessionId": S, "prompt": [text("go")]},
        },
    )
    accepted = ("agent", {"jsonrpc": "2.0", "id": 3, "result": {"messageId": "u"}})
    model = build(
        {"sessionUpdate": "state_update", "state": "running"},
        {"sessionUpdate": "user_message", "messageId": "u", "content": [text("go")]},
        {"sessionUpdate": "mood_update", "mood": "happy"},
        {"sessionUpdate": "usage_update", "used": 5, "size": 10},
        {"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"},
        {"sessionUpdate": "agent_message", "messageId": "late", "content": [text("background")]},
        frames=[prompt, accepted],
    )
    view = model.sessions[S]
    (turn,) = view.turns
    assert turn.prompt == [text("go")] and turn.accepted == "u"
    assert turn.states == ["running", "idle"] and turn.stop_reason == "end_turn" and turn.ended
    assert turn.entities == [("user message", "u")]
    assert view.background == [("agent message", "late")]
    assert view.usage == {"used": 5, "size": 10}
    assert [(variant, payload["mood"]) for _, variant, payload in view.unknown] == [
        ("mood_update", "happy")
    ]
    document = view.as_json()
    assert document["turns"][0]["stopReason"] == "end_turn"
    assert document["unknownUpdates"][0]["sessionUpdate"] == "mood_update"


def test_v1_sessions_render_too():
    """v1 (what most agents ship): chunks without messageId group by run, tool_call creates,
    plan replaces, and the prompt's {stopReason} response ends the turn."""
    prompt = (
        "client",
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/prompt",
            "params": {"sessionId": S, "prompt": [text("go")]},
        },
    )
    model = build(
        {"sessionUpdate": "agent_thought_chunk", "content": text("hmm")},
        {"sessionUpdate": "agent_message_chunk", "content": text("A")},
        {"sessionUpdate": "agent_message_chunk", "content": text("B")},
        {"sessionUpdate": "tool_call", "toolCallId": "t", "title": "Read", "status": "pending"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"},
        {
            "sessionUpdate": "plan",
            "entries": [{"content": "x", "priority": "low", "status": "pending"}],
        },
        {"sessionUpdate": "agent_message_chunk", "content": text("C")},
        frames=[prompt],
    )
    done = ("agent", {"jsonrpc": "2.0", "id": 3, "result": {"stopReason": "end_turn"}})
    model.feed(done[0], parse_frame(orjson.dumps(done[1])), 99, T)
    view = model.sessions[S]
    (turn,) = view.turns
    kinds = [
        (key[0], view.entities[key].content)
        for key in turn.entities
        if key[0] != "tool call" and key[0] != "plan"
    ]
    assert kinds == [
        ("agent thought", [text("hmm")]),
        ("agent message", [text("A"), text("B")]),
        ("agent message", [text("C")]),
    ]
    assert view.entities[("tool call", "t")].fields == {"title": "Read", "status": "completed"}
    assert view.entities[("plan", "plan")].fields["entries"][0]["content"] == "x"
    assert turn.ended and turn.stop_reason == "end_turn"


def test_v1_mode_title_and_commands_are_in_the_conversation_where_they_changed():
    """current_mode_update is no unknown variant: with session_info_update (the title),
    available_commands_update and config_option_update, it is a settings change, shown in
    its turn (or before the first) in the order it came, and kept as the session's now."""
    from acp_proxy.readers.text import render_conversation

    prompt = (
        "client",
        {"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
         "params": {"sessionId": S, "prompt": [text("go")]}},
    )  # fmt: skip
    commands = [{"name": "plan", "description": "Plan"}, {"name": "review", "description": "R"}]
    model = build(
        {"sessionUpdate": "available_commands_update", "availableCommands": commands},
        frames=[
            ("agent", {"jsonrpc": "2.0", "method": "session/update", "params": {
                "sessionId": S, "update": {"sessionUpdate": "current_mode_update",
                                           "currentModeId": "code"}}}),
            prompt,
        ],
    )  # fmt: skip
    seq = 3
    for update in (
        {"sessionUpdate": "agent_message_chunk", "content": text("Looking.")},
        {"sessionUpdate": "session_info_update", "title": "Fix the login bug"},
        {"sessionUpdate": "current_mode_update", "currentModeId": "architect"},
        {"sessionUpdate": "config_option_update",
         "configOptions": [{"id": "model", "name": "Model", "type": "select",
                            "currentValue": "opus", "options": []}]},
        {"sessionUpdate": "session_info_update", "updatedAt": "2026-12-01T00:00:00Z"},
    ):  # fmt: skip
        message = {"jsonrpc": "2.0", "method": "session/update",
                   "params": {"sessionId": S, "update": update}}  # fmt: skip
        seq += 1
        model.feed("agent", parse_frame(orjson.dumps(message)), seq, T)
    view = model.sessions[S]
    assert view.unknown == []
    lines = [click.unstyle(line) for line in render_conversation(view)]
    assert lines[lines.index("  (before the first turn / in the background)") + 1 :][:1] == [
        "  mode: code"
    ]
    turn = lines[next(i for i, line in enumerate(lines) if line.startswith("── Turn 1")) + 1 :]
    assert turn == [
        "  prompt: go",
        "  commands: /plan /review",  # (seq 3: after the prompt)
        "  agent: Looking.",
        "  title: 'Fix the login bug'",
        "  mode: architect",
        "  config: model=opus",
        "  updated: 2026-12-01T00:00:00Z",
        "  still idle",
    ]
    assert view.settings["mode"] == {"currentModeId": "architect"}
    assert view.settings["title"] == {
        "title": "Fix the login bug",
        "updatedAt": "2026-12-01T00:00:00Z",
    }
    document = view.as_json()
    assert [s["sessionUpdate"] for s in document["backgroundSettings"]] == ["current_mode_update"]
    assert len(document["turns"][0]["settings"]) == 5


def test_no_python_on_screen_a_v1_plan_is_said_once_and_what_is_missing_is_left_out():
    """A v1 plan (no id) is `plan:`, not `plan plan:`; a usage without a currency, a plan
    entry without a priority, an idle's error without a code: no `None` on screen."""
    from acp_proxy.readers.text import render_conversation

    model = build(
        {"sessionUpdate": "plan", "entries": [{"content": "x", "status": "pending"}]},
        {"sessionUpdate": "usage_update", "used": 5, "size": 10, "cost": {"amount": 1}},
    )
    lines = [click.unstyle(line) for line in render_conversation(model.sessions[S])]
    assert "  plan:" in lines and "    [ ] x" in lines and "  usage: 5/10 tokens, cost 1" in lines
    assert not [line for line in lines if "None" in line or "plan plan" in line], lines


def test_the_live_view_draws_what_the_conversation_view_draws_as_it_streams():
    """LiveConversation (chat's screen): a message streamed chunk by chunk on one line, a
    tool call again when its status changes, in the lines render_conversation draws for it;
    the turn's end as it draws it. Text only: the agent's text, nothing else."""
    from acp_proxy.readers.text import LiveConversation, render_conversation

    tool = {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read", "kind": "read"}
    frames = [
        ("client", {"jsonrpc": "2.0", "id": 0, "method": "initialize",
                    "params": {"protocolVersion": 1}}),
        ("agent", {"jsonrpc": "2.0", "id": 0, "result": {"protocolVersion": 1}}),
        ("client", {"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
                    "params": {"sessionId": S, "prompt": [text("hi")]}}),
    ]  # fmt: skip
    updates = [
        {**tool, "status": "pending"},
        {"sessionUpdate": "agent_message_chunk", "content": text("Hel")},
        {"sessionUpdate": "agent_message_chunk", "content": text("lo\n\x1b[2Jthere")},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "title": "Read a"},
        {"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"},
    ]
    frames += [
        ("agent", {"jsonrpc": "2.0", "method": "session/update",
                   "params": {"sessionId": S, "update": u}})
        for u in updates
    ]  # fmt: skip
    frames.append(("agent", {"jsonrpc": "2.0", "id": 1, "result": {"stopReason": "end_turn"}}))
    screens: dict[bool, list[str]] = {False: [], True: []}
    for text_only, pieces in screens.items():
        live = LiveConversation(pieces.append, text_only=text_only)
        for seq, (side, message) in enumerate(frames, 1):
            live.feed(side, parse_frame(orjson.dumps(message)), seq, T)
    shown = click.unstyle("".join(screens[False]))
    drawn = [click.unstyle(line) for line in render_conversation(live.model.sessions[S])]
    assert "  tool t1 'Read' (read): pending\n" in shown
    assert "  agent: Hello\n\\x1b[2Jthere\n" in shown  # one line streamed, escaped, its \n kept
    for line in drawn:
        if line.startswith(("  tool", "  ended")):
            assert line in shown.splitlines(), line
    assert shown.count("tool t1") == 3  # pending, its new title, completed
    assert click.unstyle("".join(screens[True])) == "Hello\n\\x1b[2Jthere\n"


def test_each_block_and_field_change_keeps_its_seq_and_each_turn_what_it_addressed():
    """What a reader comparing turns needs (diff), as data: the frame that brought each content
    block (a whole message's blocks share its), each field a tool call's update set (its status
    as it defaulted to pending too), and the entities each turn addressed, first seen in it or
    before, with the seq of the turn's first frame that did."""

    def update(body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        return ("agent", {"jsonrpc": "2.0", "method": "session/update",
                          "params": {"sessionId": S, "update": body}})  # fmt: skip

    frames = [
        update({"sessionUpdate": "tool_call_update", "toolCallId": "t", "title": "Read"}),
        update({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": text("A")}),
        ("client", {"jsonrpc": "2.0", "id": 3, "method": "session/prompt",
                    "params": {"sessionId": S, "prompt": [text("go")]}}),  # 3
        update({"sessionUpdate": "agent_message_chunk", "messageId": "m", "content": text("B")}),
        update({"sessionUpdate": "agent_message", "messageId": "n",
                "content": [text("C"), text("D")]}),  # 5
        update({"sessionUpdate": "tool_call_update", "toolCallId": "t", "status": "completed"}),
    ]  # fmt: skip
    model = Conversation()
    for seq, (side, message) in enumerate(frames, 1):
        model.feed(side, parse_frame(orjson.dumps(message)), seq, T)
    view = model.sessions[S]
    m, n = view.entities[("agent message", "m")], view.entities[("agent message", "n")]
    assert (m.block_seqs, n.block_seqs) == ([2, 4], [5, 5])
    tool = view.entities[("tool call", "t")]
    assert tool.changes == [(1, "title", "Read"), (1, "status", "pending"),
                            (6, "status", "completed")]  # fmt: skip
    (turn,) = view.turns
    assert turn.entities == [("agent message", "n")]
    assert list(turn.addressed.items()) == [
        (("agent message", "m"), 4), (("agent message", "n"), 5), (("tool call", "t"), 6)
    ]  # fmt: skip


def test_a_message_label_is_styled_once_not_switched_on_and_off():
    """``agent:`` is bold (click's ``dim=False`` ended the bold at once: two escapes for
    nothing); ``thought:`` dim; ``user:`` cyan and bold."""
    from acp_proxy.readers.text import _role_label

    assert _role_label("agent") == "\x1b[1magent:\x1b[0m"
    assert _role_label("thought") == "\x1b[2mthought:\x1b[0m"
    assert _role_label("user") == "\x1b[36m\x1b[1muser:\x1b[0m"


def _permission_frames(answer: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    call = {"toolCallId": "c1", "title": "Read a.txt", "kind": "read", "status": "pending"}
    options = [
        {"optionId": "ok", "name": "Allow once", "kind": "allow_once"},
        {"optionId": "no", "name": "Reject", "kind": "reject_once"},
    ]
    return [
        ("client", {"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
                    "params": {"sessionId": S, "prompt": [{"type": "text", "text": "hi"}]}}),
        ("agent", {"jsonrpc": "2.0", "id": 7, "method": "session/request_permission",
                   "params": {"sessionId": S, "toolCall": call, "options": options}}),
        ("client", {"jsonrpc": "2.0", "id": 7, **answer}),
    ]  # fmt: skip


def test_a_permission_question_and_its_answer_are_on_their_tool_call():
    """What the editor asked and what the user answered (an option by its name, cancelled,
    or an error), as chat draws it: on the tool call, in the text and the JSON."""
    from acp_proxy.readers.text import _entity_lines

    answers: list[tuple[dict[str, Any], str]] = [
        ({"result": {"outcome": {"outcome": "selected", "optionId": "ok"}}}, "Allow once"),
        ({"result": {"outcome": {"outcome": "cancelled"}}}, "cancelled"),
        ({"error": {"code": -32601, "message": "Method not found"}}, "refused: error -32601"),
    ]
    for answer, said in answers:
        model = build(frames=_permission_frames(answer))
        view = model.sessions[S]
        entity = view.entities[("tool call", "c1")]
        assert [p["options"] for p in entity.permissions] == [["Allow once", "Reject"]]
        assert str(entity.permissions[0]["answer"]).startswith(said)
        assert entity.as_json()["permissions"][0]["seq"] == 2
        lines = [click.unstyle(line) for line in _entity_lines(entity)]
        assert lines[0] == "  tool c1 'Read a.txt' (read): pending"
        assert lines[1].startswith(f"      permission (Allow once / Reject): {said}"), lines


def test_show_conversation_says_the_permissions_of_a_recording():
    from tests.conftest import RECORDINGS, invoke

    shown = invoke("show", "--conversation", str(RECORDINGS / "v1-tour.jsonl"))
    assert shown.returncode == 0, shown.stderr
    text = shown.stdout.decode()
    assert text.count("permission (Allow once / Reject): Allow once") == 2, text


def test_chat_s_live_text_wraps_between_words_at_the_terminal_s_width():
    """On a terminal, a streamed message wraps between words at its width (a word cut
    across chunks stays whole: a piece's last word waits for the next), not mid-word as the
    terminal would; the words are all there, in order; without a width nothing changes."""
    from acp_proxy.readers.text import LiveConversation

    pieces = ["This is the exa", "mple agent that ships with acp-proxy. ",
              "It has no model, so this answer is scripted,", " but every mes",
              "sage you see went through the proxy and into the transcript."]  # fmt: skip
    prompt = {"jsonrpc": "2.0", "id": 1, "method": "session/prompt",
              "params": {"sessionId": S, "prompt": [{"type": "text", "text": "hi"}]}}  # fmt: skip

    def drawn(width: int | None) -> str:
        out: list[str] = []
        live = LiveConversation(out.append, width=width)
        live.feed("client", parse_frame(orjson.dumps(prompt)), 1, T)
        for seq, text in enumerate(pieces, 2):
            update = {"sessionUpdate": "agent_message_chunk",
                      "content": {"type": "text", "text": text}}  # fmt: skip
            message = {"jsonrpc": "2.0", "method": "session/update",
                       "params": {"sessionId": S, "update": update}}  # fmt: skip
            live.feed("agent", parse_frame(orjson.dumps(message)), seq, T)
        live.close_line()
        return click.unstyle("".join(out))

    whole = "".join(pieces)
    assert drawn(None) == f"  agent: {whole}\n"
    wrapped = drawn(40)
    lines = wrapped.splitlines()
    assert len(lines) > 3 and all(len(line) <= 40 for line in lines), lines
    assert wrapped.split() == ["agent:", *whole.split()]  # every word whole, in order
    assert all(line.startswith("    ") for line in lines[1:]), lines
