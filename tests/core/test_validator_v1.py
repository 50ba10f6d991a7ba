"""The validator on ACP v1 connections, rule by rule: the smallest v1 exchange that breaks
each rule beside a clean twin that must not be flagged at all. Each docstring quotes the
sentence of the stable v1 pages the rule comes from (see rules.py for the page)."""

from __future__ import annotations

from typing import Any

from acp_proxy.core.rules import CATALOG, RULES, Level, Scope
from tests.exchanges import (
    OPTIONS,
    A,
    C,
    Frames,
    S,
    check,
    err,
    findings,
    note,
    ok,
    req,
    rules,
    setup,
    turn,
    upd,
)

#: What the v1 setup's client advertises (fs and terminals).
V1_CLIENT_CAPS: dict[str, Any] = {
    "fs": {"readTextFile": True, "writeTextFile": True},
    "terminal": True,
}


def v1_prompt(id_: Any = 10, blocks: Any = None) -> tuple[str, dict[str, Any]]:
    blocks = blocks if blocks is not None else [{"type": "text", "text": "hi"}]
    return (C, req(id_, "session/prompt", {"sessionId": S, "prompt": blocks}))


def chunk(text: str = "ok") -> tuple[str, dict[str, Any]]:
    return upd({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": text}})


def v1_turn(id_: Any = 10, reason: str = "end_turn") -> Frames:
    return [v1_prompt(id_), chunk(), (A, ok(id_, {"stopReason": reason}))]


CANCEL = (C, note("session/cancel", {"sessionId": S}))


def tool(call: str = "t1", **extra: Any) -> tuple[str, dict[str, Any]]:
    return upd({"sessionUpdate": "tool_call", "toolCallId": call, "title": "Run", **extra})


def tool_update(call: str = "t1", **extra: Any) -> tuple[str, dict[str, Any]]:
    return upd({"sessionUpdate": "tool_call_update", "toolCallId": call, **extra})


# --- capabilities -----------------------------------------------------------------------


def test_capability_fs():
    """ "If readTextFile or writeTextFile is false or not present, the Agent MUST NOT attempt to
    call the corresponding filesystem method." (v1 File System)"""
    read = (A, req(7, "fs/read_text_file", {"sessionId": S, "path": "/a"}))
    answer = (C, ok(7, {"content": "x"}))
    check("capability-fs", [*setup(1, client={}), read, answer], [*setup(1), read, answer])
    write = (A, req(8, "fs/write_text_file", {"sessionId": S, "path": "/a", "content": "x"}))
    only_read = {"fs": {"readTextFile": True}}
    assert rules([*setup(1, client=only_read), write, (C, ok(8, {}))]) == ["capability-fs"]


def test_capability_terminal():
    """ "If terminal is false or not present, the Agent MUST NOT attempt to call any terminal
    methods." (v1 Terminals)"""
    create = (A, req(7, "terminal/create", {"sessionId": S, "command": "ls"}))
    made = (C, ok(7, {"terminalId": "term1"}))
    release = (A, req(8, "terminal/release", {"sessionId": S, "terminalId": "term1"}))
    done = (C, ok(8, {}))
    check(
        "capability-terminal",
        [*setup(1, client={"terminal": False}), create, made, release, done],
        [*setup(1), create, made, release, done],
    )


def test_capability_config_boolean():
    """ "Agents MUST NOT include type: "boolean" options in configOptions payloads unless the
    Client advertised support." (v1 Session Config Options)"""
    option = {"id": "fast", "name": "Fast", "type": "boolean", "currentValue": True}
    bad = setup(1, new_result={"configOptions": [option]})
    caps = {
        **setup(1)[0][1]["params"]["clientCapabilities"],
        "session": {"configOptions": {"boolean": {}}},
    }
    clean = setup(1, client=caps, new_result={"configOptions": [option]})
    check("capability-config-boolean", bad, clean)
    update = upd({"sessionUpdate": "config_option_update", "configOptions": [option]})
    assert rules([*setup(1), update]) == ["capability-config-boolean"]


def test_capability_notices():
    """ "Agents MUST only send this update when the Client advertised the session.notices
    Client capability." (v1 schema, SessionUpdate notice)"""
    notice = upd({"sessionUpdate": "notice", "severity": "info", "title": "Indexing"})
    caps: dict[str, Any] = {"session": {"notices": {}}}
    check("capability-notices", [*setup(1), notice], [*setup(1, client=caps), notice])


def test_capability_compaction():
    """ "The Agent MUST NOT send compaction_update or compaction_summary_chunk unless the Client
    advertised support by supplying clientCapabilities.session.compaction: {}" (v1 Prompt Turn)"""
    compaction = upd(
        {"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "in_progress"}
    )
    done = upd({"sessionUpdate": "compaction_update", "compactionId": "c1", "status": "completed"})
    caps: dict[str, Any] = {"session": {"compaction": {}}}
    check(
        "capability-compaction",
        [*setup(1), compaction, done],
        [*setup(1, client=caps), compaction, done],
    )


def test_capability_session():
    """ "If loadSession is false or not present, the Agent does not support loading sessions and
    Clients MUST NOT attempt to call session/load." (the same for resume, close, list, delete,
    and logout) (v1 Session Setup, List, Delete, Authentication)"""
    load = (C, req(5, "session/load", {"sessionId": "old", "cwd": "/", "mcpServers": []}))
    loaded = (A, ok(5, {}))
    check(
        "capability-session",
        [*setup(1), load, loaded],
        [*setup(1, agent={"loadSession": True}), load, loaded],
    )
    listing = (C, req(6, "session/list", {}))
    listed = (A, ok(6, {"sessions": []}))
    assert rules([*setup(1), listing, listed]) == ["capability-session"]
    can_list: dict[str, Any] = {"sessionCapabilities": {"list": {}}}
    assert rules([*setup(1, agent=can_list), listing, listed]) == []
    logout = [(C, req(7, "logout", {})), (A, ok(7, {}))]
    assert rules([*setup(1), *logout]) == ["capability-session"]
    assert rules([*setup(1, agent={"auth": {"logout": {}}}), *logout]) == []


def test_capability_additional_directories():
    """ "Clients MUST only send additionalDirectories when the Agent advertises
    sessionCapabilities.additionalDirectories." (v1 Session Setup)"""
    new = (
        C,
        req(5, "session/new", {"cwd": "/", "mcpServers": [], "additionalDirectories": ["/b"]}),
    )
    made = (A, ok(5, {"sessionId": "s2"}))
    can: dict[str, Any] = {"sessionCapabilities": {"additionalDirectories": {}}}
    check(
        "capability-additional-directories",
        [*setup(1), new, made],
        [*setup(1, agent=can), new, made],
    )


def system_prompt_frames(prompt: Any, agent: dict[str, Any] | None = None) -> Frames:
    """A session/new with a system prompt (answered), after initialize with ``agent``."""
    params = {"cwd": "/", "mcpServers": [], "systemPrompt": prompt}
    return [
        *setup(1, agent=agent),
        (C, req(5, "session/new", params)),
        (A, ok(5, {"sessionId": "s2"})),
    ]


def rules_but_unstable(frames: Frames) -> list[str]:
    """The rules found, but the unstable-feature notes (the system prompt is unstable in the
    shipped v1 schema 1.29.1: stable from schema v1.30)."""
    return [f.rule for f in findings(frames) if f.rule != "unstable-feature"]


APPEND = {"mode": "append", "content": [{"type": "text", "text": "Be brief."}]}
OVERRIDE = {"mode": "override", "content": [{"type": "text", "text": "You are a linter."}]}


def test_capability_system_prompt():
    """ "Clients MUST only send this when the Agent advertises
    `sessionCapabilities.systemPrompt`", and override mode "MUST only use it when the Agent
    advertises `sessionCapabilities.systemPrompt.mode.override`" (v1 schema: SystemPrompt,
    SystemPromptMode): on session/new, load, resume and fork."""
    can: dict[str, Any] = {"sessionCapabilities": {"systemPrompt": {}}}
    overrides: dict[str, Any] = {
        "sessionCapabilities": {"systemPrompt": {"mode": {"override": {}}}}
    }
    assert rules_but_unstable(system_prompt_frames(APPEND)) == ["capability-system-prompt"]
    assert rules_but_unstable(system_prompt_frames(APPEND, can)) == []
    assert rules_but_unstable(system_prompt_frames(None)) == []  # null: the agent's own
    assert rules_but_unstable(system_prompt_frames(OVERRIDE, can)) == ["capability-system-prompt"]
    assert rules_but_unstable(system_prompt_frames(OVERRIDE, overrides)) == []
    (found,) = [f for f in findings(system_prompt_frames(OVERRIDE, can)) if f.level == "error"]
    assert found.seq == 5 and found.message == (
        "session/new sends a systemPrompt, but the agent did not advertise "
        "sessionCapabilities.systemPrompt.mode.override (override mode)"
    )
    # the system prompt is known: checked against the unstable schema, not unknown
    notes = [f.message for f in findings(system_prompt_frames(APPEND, can))]
    assert (
        "NewSessionRequest.systemPrompt is only in the unstable ACP v1 schema (checked against it)"
        in notes
    )
    broken = {"content": [{"type": "text", "text": "x"}]}  # mode is required
    assert rules_but_unstable(system_prompt_frames(broken, can)) == ["schema"]
    # the same rule on session/load
    load = {"sessionId": "s9", "cwd": "/", "mcpServers": [], "systemPrompt": APPEND}
    loaded = [
        *setup(1, agent={"loadSession": True}),
        (C, req(6, "session/load", load)),
        (A, ok(6, {})),
    ]
    assert rules_but_unstable(loaded) == ["capability-system-prompt"]


def system_prompt_v2(prompt: Any, session_caps: dict[str, Any]) -> Frames:
    """The same on v2, whose agent advertises it under capabilities.session."""
    frames = setup(2)
    frames[1][1]["result"]["capabilities"]["session"].update(session_caps)
    params = {"cwd": "/", "mcpServers": [], "systemPrompt": prompt}
    return [*frames, (C, req(5, "session/new", params)), (A, ok(5, {"sessionId": "s2"}))]


def test_system_prompt_on_v2():
    """v2 names the capability session.systemPrompt; the same two rules hold."""
    can: dict[str, Any] = {"systemPrompt": {}}
    assert rules_but_unstable(system_prompt_v2(APPEND, {})) == ["capability-system-prompt"]
    assert rules_but_unstable(system_prompt_v2(APPEND, can)) == []
    assert rules_but_unstable(system_prompt_v2(OVERRIDE, can)) == ["capability-system-prompt"]
    overrides: dict[str, Any] = {"systemPrompt": {"mode": {"override": {}}}}
    assert rules_but_unstable(system_prompt_v2(OVERRIDE, overrides)) == []
    empty = {"mode": "append", "content": []}
    assert rules_but_unstable(system_prompt_v2(empty, can)) == ["system-prompt-empty"]


def test_system_prompt_empty():
    """ "Clients MUST NOT send an empty array." (v1 schema: SystemPrompt.content)"""
    can: dict[str, Any] = {"sessionCapabilities": {"systemPrompt": {}}}
    empty = {"mode": "append", "content": []}
    assert rules_but_unstable(system_prompt_frames(empty, can)) == ["system-prompt-empty"]
    assert rules_but_unstable(system_prompt_frames(APPEND, can)) == []


def test_capability_mcp_transport():
    """ "Before using HTTP or SSE transports, Clients MUST verify the Agent's capabilities during
    initialization" (v1 Session Setup)"""
    server = {"type": "http", "name": "docs", "url": "https://x", "headers": []}
    new = (C, req(5, "session/new", {"cwd": "/", "mcpServers": [server]}))
    made = (A, ok(5, {"sessionId": "s2"}))
    check(
        "capability-mcp-transport",
        [*setup(1), new, made],
        [*setup(1, agent={"mcpCapabilities": {"http": True}}), new, made],
    )


def test_prompt_capability_v1():
    """ "Clients MUST restrict types of content according to the Prompt Capabilities established
    during initialization." (v1 Prompt Turn): v1 advertises booleans, false is not advertised."""
    image = [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]
    bad = [*setup(1, prompt_caps={"image": False}), v1_prompt(10, image)]
    bad.append((A, ok(10, {"stopReason": "end_turn"})))
    clean = [*setup(1, prompt_caps={"image": True}), v1_prompt(10, image)]
    clean.append((A, ok(10, {"stopReason": "end_turn"})))
    check("prompt-capability", bad, clean)


# --- paths ------------------------------------------------------------------------------


def test_path_not_absolute():
    """ "All file paths in the protocol MUST be absolute." (v1 Overview); cwd "MUST be an
    absolute path" (v1 Session Setup)"""
    new = (C, req(5, "session/new", {"cwd": "project", "mcpServers": []}))
    made = (A, ok(5, {"sessionId": "s2"}))
    found = check(
        "path-not-absolute",
        [*setup(1), new, made],
        [*setup(1), (C, req(5, "session/new", {"cwd": "/project", "mcpServers": []})), made],
    )
    assert found[0].message == 'session/new cwd "project" is not absolute'
    windows = (C, req(5, "session/new", {"cwd": "C:\\project", "mcpServers": []}))
    assert rules([*setup(1), windows, made]) == []
    read = (A, req(7, "fs/read_text_file", {"sessionId": S, "path": "src/a.py"}))
    assert rules([*setup(1), read, (C, ok(7, {"content": ""}))]) == ["path-not-absolute"]
    diff = tool(content=[{"type": "diff", "path": "a.py", "newText": "x"}])
    assert rules([*setup(1), diff]) == ["path-not-absolute"]
    located = tool(locations=[{"path": "a.py"}])
    assert rules([*setup(1), located]) == ["path-not-absolute"]
    term = (A, req(8, "terminal/create", {"sessionId": S, "command": "ls", "cwd": "sub"}))
    assert "path-not-absolute" in rules([*setup(1), term, (C, ok(8, {"terminalId": "t"}))])


# --- the prompt turn and cancellation --------------------------------------------------------


def test_prompt_overlap():
    """ "Once a prompt turn completes, the Client may send another session/prompt" (v1 Prompt
    Turn): not before."""
    bad = [*setup(1), v1_prompt(10), v1_prompt(11), (A, ok(10, {"stopReason": "end_turn"}))]
    bad.append((A, ok(11, {"stopReason": "end_turn"})))
    found = check("prompt-overlap", bad, [*setup(1), *v1_turn(10), *v1_turn(11)])
    assert found[0].level == Level.WARNING


def test_cancel_answered_with_error():
    """ "Agents MUST catch these errors and return the semantically meaningful cancelled stop
    reason, so that Clients can reliably confirm the cancellation." (v1 Prompt Turn)"""
    base = [*setup(1), v1_prompt(10), chunk(), CANCEL]
    check(
        "cancel-answered-with-error",
        [*base, (A, err(10, -32800, "cancelled"))],
        [*base, (A, ok(10, {"stopReason": "cancelled"}))],
    )


def test_cancel_ended_without_cancelled_v1():
    """ "the Agent MUST respond to the original session/prompt request with the cancelled stop
    reason" (v1 Prompt Turn): end_turn after a cancel is a warning, it may have raced."""
    base = [*setup(1), v1_prompt(10), chunk(), CANCEL]
    found = check(
        "cancel-ended-without-cancelled",
        [*base, (A, ok(10, {"stopReason": "end_turn"}))],
        [*base, (A, ok(10, {"stopReason": "cancelled"}))],
    )
    assert [f.level for f in found] == [Level.WARNING]


def test_cancelled_without_cancel():
    """The cancelled stop reason "MUST be returned when the client sends a session/cancel
    notification" (v1 schema, StopReason): without one, it is suspicious (a warning)."""
    found = check(
        "cancelled-without-cancel", [*setup(1), *v1_turn(10, "cancelled")], [*setup(1), *v1_turn()]
    )
    assert found[0].level == Level.WARNING


def test_update_after_cancelled():
    """ "The Agent MAY send session/update notifications with content or tool call updates after
    receiving the session/cancel notification, but it MUST ensure that it does so before
    responding to the session/prompt request." (v1 Prompt Turn)"""
    base = [*setup(1), v1_prompt(10), CANCEL, chunk("late but fine")]
    answered = [*base, (A, ok(10, {"stopReason": "cancelled"}))]
    check("update-after-cancelled", [*answered, chunk("too late")], [*answered, *v1_turn(11)])
    # other updates (commands, usage) are not turn output
    commands = upd({"sessionUpdate": "available_commands_update", "availableCommands": []})
    assert rules([*answered, commands]) == []


def test_permission_not_cancelled_v1():
    """ "If the current prompt turn gets cancelled, the Client MUST respond with the "cancelled"
    outcome" (v1 Tool Calls): pending at the cancel, or asked while the cancelled prompt runs."""
    params = {"sessionId": S, "toolCall": {"toolCallId": "t1"}, "options": OPTIONS}
    ask = (A, req(0, "session/request_permission", params))
    selected = (C, ok(0, {"outcome": {"outcome": "selected", "optionId": "allow"}}))
    cancelled = (C, ok(0, {"outcome": {"outcome": "cancelled"}}))
    end = (A, ok(10, {"stopReason": "cancelled"}))
    check(
        "permission-not-cancelled",
        [*setup(1), v1_prompt(), ask, CANCEL, selected, end],
        [*setup(1), v1_prompt(), ask, CANCEL, cancelled, end],
    )
    asked_after = [*setup(1), v1_prompt(), CANCEL, ask, selected, end]
    assert rules(asked_after) == ["permission-not-cancelled"]


def test_permission_option_unknown():
    """outcome "selected with an optionId - The ID of the selected permission option" (v1 Tool
    Calls): one of the options the request offered."""
    params = {"sessionId": S, "toolCall": {"toolCallId": "t1"}, "options": OPTIONS}
    ask = (A, req(0, "session/request_permission", params))
    base = [*setup(1), v1_prompt(), ask]
    end = (A, ok(10, {"stopReason": "end_turn"}))
    check(
        "permission-option-unknown",
        [*base, (C, ok(0, {"outcome": {"outcome": "selected", "optionId": "always"}})), end],
        [*base, (C, ok(0, {"outcome": {"outcome": "selected", "optionId": "allow"}})), end],
    )


# --- tool calls and terminals ------------------------------------------------------------------


def test_tool_call_unknown():
    """ "When the language model requests a tool invocation, the Agent SHOULD report it to the
    Client" with tool_call, before updating it (v1 Tool Calls)."""
    found = check(
        "tool-call-unknown",
        [*setup(1), tool_update("t1", status="completed")],
        [*setup(1), tool("t1"), tool_update("t1", status="completed")],
    )
    assert found[0].level == Level.WARNING


def test_prompt_end_turn_open_tools():
    """ "If there are no pending tool calls, the turn ends and the Agent MUST respond to the
    original session/prompt request with a StopReason" (v1 Prompt Turn, Check for Completion):
    end_turn with a tool call of the turn still pending or in_progress. Only a warning: "Agents
    MAY stop the turn at any point"."""
    end = (A, ok(10, {"stopReason": "end_turn"}))
    found = check(
        "prompt-end-turn-open-tools",
        [*setup(1), v1_prompt(), tool("t1", status="in_progress"), end],
        [
            *setup(1),
            v1_prompt(),
            tool("t1", status="in_progress"),
            tool_update("t1", status="completed"),
            end,
        ],
    )
    assert found[0].level == Level.WARNING and '"t1" (in_progress)' in found[0].message
    # A tool_call with no status is pending; a failed call is finished.
    assert rules([*setup(1), v1_prompt(), tool("t2"), end]) == ["prompt-end-turn-open-tools"]
    assert (
        rules([*setup(1), v1_prompt(), tool("t2"), tool_update("t2", status="failed"), end]) == []
    )
    # Only the calls of this turn count: one left open by the previous turn (already warned
    # about) does not come back, nor does a cancelled turn's.
    earlier = [v1_prompt(9), tool("t3"), (A, ok(9, {"stopReason": "end_turn"}))]
    later = [v1_prompt(10), chunk(), end]
    assert rules([*setup(1), *earlier, *later]) == ["prompt-end-turn-open-tools"]
    cancelled = [v1_prompt(9), tool("t4"), CANCEL, (A, ok(9, {"stopReason": "cancelled"}))]
    assert rules([*setup(1), *cancelled, *later]) == []


def terminal_session(*middle: tuple[str, Any]) -> Frames:
    create = (A, req(7, "terminal/create", {"sessionId": S, "command": "ls"}))
    made = (C, ok(7, {"terminalId": "term1"}))
    return [*setup(1), create, made, *middle]


def release(id_: int = 8, terminal: str = "term1") -> Frames:
    return [
        (A, req(id_, "terminal/release", {"sessionId": S, "terminalId": terminal})),
        (C, ok(id_, {})),
    ]


def test_terminal_unknown():
    """terminalId: "The ID of a terminal created with terminal/create" (v1 Tool Calls,
    Terminals)."""
    output = (A, req(9, "terminal/output", {"sessionId": S, "terminalId": "term2"}))
    result = (C, ok(9, {"output": "", "truncated": False}))
    good = (A, req(9, "terminal/output", {"sessionId": S, "terminalId": "term1"}))
    check(
        "terminal-unknown",
        terminal_session(output, result, *release()),
        terminal_session(good, result, *release()),
    )
    shown = tool(content=[{"type": "terminal", "terminalId": "term2"}])
    assert "terminal-unknown" in rules(terminal_session(shown, *release()))


def test_terminal_released():
    """ "After release the terminal ID becomes invalid for all other terminal/* methods." (v1
    Terminals)"""
    output = (A, req(9, "terminal/output", {"sessionId": S, "terminalId": "term1"}))
    result = (C, ok(9, {"output": "", "truncated": False}))
    check(
        "terminal-released",
        terminal_session(*release(), output, result),
        terminal_session(output, result, *release()),
    )
    assert rules(terminal_session(*release(8), *release(9))) == ["terminal-released"]


def test_terminal_unreleased():
    """ "The Agent MUST release the terminal using terminal/release when it's no longer needed."
    (v1 Terminals): unreleased at the end of the connection is a warning."""
    found = check("terminal-unreleased", terminal_session(), terminal_session(*release()))
    assert found[0].level == Level.WARNING and found[0].seq == 6


# --- sessions -----------------------------------------------------------------------------------


def test_load_replay_after_response():
    """ "When all the conversation entries have been streamed to the Client, the Agent MUST
    respond to the original session/load request." (v1 Session Setup)"""
    can = {"loadSession": True}
    load = (C, req(5, "session/load", {"sessionId": "old", "cwd": "/", "mcpServers": []}))
    replay = upd(
        {"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}, "old"
    )
    loaded = (A, ok(5, {}))
    check(
        "load-replay-after-response",
        [*setup(1, agent=can), load, loaded, replay],
        [*setup(1, agent=can), load, replay, loaded],
    )


def test_resume_replayed_history():
    """ "Unlike session/load, the Agent MUST NOT replay the conversation history via
    session/update notifications before responding." (v1 Session Setup)"""
    can: dict[str, Any] = {"sessionCapabilities": {"resume": {}}}
    resume = (C, req(5, "session/resume", {"sessionId": "old", "cwd": "/"}))
    history = upd(
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}}, "old"
    )
    commands = upd({"sessionUpdate": "available_commands_update", "availableCommands": []}, "old")
    resumed = (A, ok(5, {}))
    check(
        "resume-replayed-history",
        [*setup(1, agent=can), resume, history, resumed],
        [*setup(1, agent=can), resume, commands, resumed],
    )


MODES = {"modes": {"currentModeId": "ask", "availableModes": [{"id": "ask", "name": "Ask"}]}}


def test_mode_unknown():
    """modeId: "Must be one of the modes listed in availableModes" (v1 Session Modes)"""
    mode = lambda m: (C, req(5, "session/set_mode", {"sessionId": S, "modeId": m}))  # noqa: E731
    check(
        "mode-unknown",
        [*setup(1, new_result=MODES), mode("code"), (A, ok(5, {}))],
        [*setup(1, new_result=MODES), mode("ask"), (A, ok(5, {}))],
    )


def test_config_value_unknown():
    """ "For select options, this must be one of the values listed in the option's options
    array. For boolean options, this must be a boolean." (v1 Session Config Options)"""
    option = {
        "id": "model",
        "name": "Model",
        "type": "select",
        "currentValue": "fast",
        "options": [{"value": "fast", "name": "Fast"}, {"value": "smart", "name": "Smart"}],
    }
    offered = setup(1, new_result={"configOptions": [option]})

    def set_to(config: str, value: Any) -> Frames:
        params = {"sessionId": S, "configId": config, "value": value}
        # the agent keeps a value it does not offer out of its answer
        current = value if value in ("fast", "smart") else option["currentValue"]
        result = {"configOptions": [{**option, "currentValue": current}]}
        return [(C, req(5, "session/set_config_option", params)), (A, ok(5, result))]

    check(
        "config-value-unknown",
        [*offered, *set_to("model", "huge")],
        [*offered, *set_to("model", "smart")],
    )
    assert rules([*offered, *set_to("effort", "high")]) == ["config-value-unknown"]
    # a type the schema does not define has values the validator cannot know: set to a
    # string, it is no error ("Unknown type values with string payloads also gracefully
    # deserialize", SetSessionConfigOptionRequest)
    for kind in ("_slider", "number"):
        other = {"id": "n", "name": "N", "type": kind, "currentValue": "3"}
        newer = setup(1, new_result={"configOptions": [other]})
        params = {"sessionId": S, "configId": "n", "value": "4"}
        answer = ok(5, {"configOptions": [{**other, "currentValue": "4"}]})
        frames = [*newer, (C, req(5, "session/set_config_option", params)), (A, answer)]
        assert "config-value-unknown" not in rules(frames), kind
        assert "error" not in {f.level for f in findings(frames)}, kind


def test_auth_method_unknown():
    """methodId: "Must be one of the methods advertised in the initialize response." (v1
    Authentication)"""
    methods = [{"id": "api-key", "name": "API key"}]
    auth = lambda m: (C, req(5, "authenticate", {"methodId": m}))  # noqa: E731
    check(
        "auth-method-unknown",
        [*setup(1, auth=methods), auth("oauth"), (A, ok(5, {}))],
        [*setup(1, auth=methods), auth("api-key"), (A, ok(5, {}))],
    )


def test_line_not_1_based():
    """ "Line numbers are 1-based" (v1 Overview, Argument Requirements); line: "Line number
    to start reading from (1-based)" (v1 File System). The schema allows 0: a warning."""
    found = check(
        "line-not-1-based",
        [*setup(1), tool(locations=[{"path": "/a.py", "line": 0}])],
        [*setup(1), tool(locations=[{"path": "/a.py", "line": 1}])],
    )
    assert found[0].level == Level.WARNING

    def read(line: Any) -> tuple[str, dict[str, Any]]:
        return (A, req(7, "fs/read_text_file", {"sessionId": S, "path": "/a", "line": line}))

    answer = (C, ok(7, {"content": ""}))
    assert rules([*setup(1), read(0), answer]) == ["line-not-1-based"]
    assert rules([*setup(1), read(1), answer]) == []
    assert rules([*setup(1), read(None), answer]) == []


def test_auth_method_duplicate():
    """AuthMethod id: "Unique identifier for this authentication method." (v1 schema)"""
    key = {"id": "api-key", "name": "API key"}
    check(
        "auth-method-duplicate",
        setup(1, auth=[key, {**key, "name": "Key again"}]),
        setup(1, auth=[key, {"id": "oauth", "name": "OAuth"}]),
    )


def test_mode_current_unknown():
    """availableModes: "The set of modes that the Agent can operate in" (v1 Session Modes):
    the current mode is one of them, in the setup result and in current_mode_update."""
    offered = MODES["modes"]
    stray = {"modes": {**offered, "currentModeId": "code"}}
    check("mode-current-unknown", setup(1, new_result=stray), setup(1, new_result=MODES))

    def switch(mode: str) -> tuple[str, dict[str, Any]]:
        return upd({"sessionUpdate": "current_mode_update", "currentModeId": mode})

    assert rules([*setup(1, new_result=MODES), switch("code")]) == ["mode-current-unknown"]
    assert rules([*setup(1, new_result=MODES), switch("ask")]) == []


def test_config_current_unknown():
    """ "Agents MUST always provide a default value for every configuration option." (v1
    Session Config Options): for a select option, one of its values (flat or grouped)."""
    flat = [{"value": "fast", "name": "Fast"}, {"value": "smart", "name": "Smart"}]
    option = {"id": "model", "name": "Model", "type": "select", "options": flat}
    check(
        "config-current-unknown",
        setup(1, new_result={"configOptions": [{**option, "currentValue": "huge"}]}),
        setup(1, new_result={"configOptions": [{**option, "currentValue": "smart"}]}),
    )
    grouped = {**option, "options": [{"group": "g", "name": "G", "options": flat}]}

    def update(value: str) -> tuple[str, dict[str, Any]]:
        options = [{**grouped, "currentValue": value}]
        return upd({"sessionUpdate": "config_option_update", "configOptions": options})

    assert rules([*setup(1), update("huge")]) == ["config-current-unknown"]
    assert rules([*setup(1), update("fast")]) == []


def test_close_cancels_the_running_turn():
    """ "The Agent MUST cancel any ongoing work for that session as if session/cancel had been
    called" (v1 Session Setup, Closing a Session): the running prompt ends cancelled."""
    can_close: dict[str, Any] = {"sessionCapabilities": {"close": {}}}
    close = [(C, req(5, "session/close", {"sessionId": S})), (A, ok(5, {}))]
    found = check(
        "cancel-ended-without-cancelled",
        [*setup(1, agent=can_close), v1_prompt(), *close, (A, ok(10, {"stopReason": "end_turn"}))],
        [*setup(1, agent=can_close), v1_prompt(), *close, (A, ok(10, {"stopReason": "cancelled"}))],
    )
    assert "cancelled" in found[0].message
    answered_with_error = [*setup(1, agent=can_close), v1_prompt(), *close, (A, err(10))]
    assert rules(answered_with_error) == ["cancel-answered-with-error"]


def test_initialize_version_higher():
    """ "If the Agent supports the requested version, it MUST respond with the same version.
    Otherwise, the Agent MUST respond with the latest version it supports." (v1
    Initialization): the client asks for its latest, so a higher answer is suspect."""
    ask_v1 = setup(1)[0]
    higher = (
        A,
        ok(0, {"protocolVersion": 2, "info": {"name": "a", "version": "1"}, "capabilities": {}}),
    )
    found = check("initialize-version-higher", [ask_v1, higher], setup(1)[:2])
    assert found[0].level == Level.WARNING


def test_an_answer_in_a_version_no_schema_is_shipped_for_is_checked_as_the_one_asked():
    """An agent answering protocolVersion 99 to a v1 client, in v1's shapes: the answer is
    suspect (initialize-version-higher) and nothing else; it was checked against the v2
    schema (v1 fields "not in schema", v2's info "missing")."""
    ask_v1, answer = setup(1)[:2]
    higher = (A, ok(0, {**answer[1]["result"], "protocolVersion": 99}))
    assert rules([ask_v1, higher]) == ["initialize-version-higher"]


def test_initialize_again():
    """initialize: "This method is called once at the beginning of the connection" (v1
    schema, ClientRequest)."""
    again = (C, req(5, "initialize", setup(1)[0][1]["params"]))
    answer = (A, ok(5, setup(1)[1][1]["result"]))
    check("initialize-again", [*setup(1), again, answer], setup(1))


def cancel_request(side: str, target: Any) -> tuple[str, dict[str, Any]]:
    return (side, note("$/cancel_request", {"requestId": target}))


def test_cancel_request_unknown():
    """ "This is a notification sent by the side that sent a request to cancel that request."
    (v1 schema, $/cancel_request): it names a request its sender has outstanding."""
    read = (A, req(7, "fs/read_text_file", {"sessionId": S, "path": "/a"}))
    answer = (C, ok(7, {"content": ""}))
    check(
        "cancel-request-unknown",
        [*setup(1), read, cancel_request(C, 7), answer],  # the client never sent request 7
        [*setup(1), read, cancel_request(A, 7), answer],
    )
    # Just answered (the cancel crossed the answer) is fine too.
    assert rules([*setup(1), read, answer, cancel_request(A, 7)]) == []


def test_cancel_request_error_code():
    """ "MUST send one of these responses for the original request: ... An error response with
    code -32800 (Request Cancelled)" (v1 Cancellation, $/cancel_request)."""
    read = (A, req(7, "fs/read_text_file", {"sessionId": S, "path": "/a"}))

    def answered(code: int) -> tuple[str, dict[str, Any]]:
        return (C, {"jsonrpc": "2.0", "id": 7, "error": {"code": code, "message": "no"}})

    found = check(
        "cancel-request-error-code",
        [*setup(1), read, cancel_request(A, 7), answered(-32603)],
        [*setup(1), read, cancel_request(A, 7), answered(-32800)],
    )
    assert found[0].level == Level.WARNING
    # A result is a valid answer too, and an error without a cancel is no concern of this rule.
    assert rules([*setup(1), read, cancel_request(A, 7), (C, ok(7, {"content": ""}))]) == []
    assert rules([*setup(1), read, answered(-32603)]) == []


LISTING: dict[str, Any] = {"sessionCapabilities": {"list": {}, "delete": {}}}


def listing(id_: int, cursor: str | None, sessions: list[str], next_cursor: str | None) -> Frames:
    params = {"cursor": cursor} if cursor is not None else {}
    listed = [{"sessionId": s, "cwd": "/"} for s in sessions]
    result: dict[str, Any] = {"sessions": listed}
    if next_cursor is not None:
        result["nextCursor"] = next_cursor
    return [(C, req(id_, "session/list", params)), (A, ok(id_, result))]


def test_list_cursor_unknown():
    """ "Clients MUST treat cursors as opaque tokens — do not parse, modify, or persist them"
    (v1 Session List, Pagination)."""
    first = listing(5, None, ["a"], "page-2")
    check(
        "list-cursor-unknown",
        [*setup(1, agent=LISTING), *first, *listing(6, "page-3", ["b"], None)],
        [*setup(1, agent=LISTING), *first, *listing(6, "page-2", ["b"], None)],
    )


def test_deleted_session_listed():
    """ "Deleted sessions no longer appear in future session/list results." (v1 Session
    Delete)."""
    delete = [(C, req(5, "session/delete", {"sessionId": "old"})), (A, ok(5, {}))]
    check(
        "deleted-session-listed",
        [*setup(1, agent=LISTING), *delete, *listing(6, None, ["old", S], None)],
        [*setup(1, agent=LISTING), *delete, *listing(6, None, [S], None)],
    )
    refused = [(C, req(5, "session/delete", {"sessionId": "old"})), (A, err(5))]
    assert rules([*setup(1, agent=LISTING), *refused, *listing(6, None, ["old"], None)]) == []


# --- one version's rule never fires on the other ------------------------------------------------


def test_v1_rules_never_fire_on_v2():
    """Every v1 rule is scoped to v1, and a v2 connection with the same traffic shapes stays
    clean of them."""
    v1_rules = {r.id for r in CATALOG if r.scope is Scope.V1}
    assert "capability-fs" in v1_rules and "batch" in v1_rules
    relative = (C, req(5, "session/new", {"cwd": "project", "mcpServers": []}))
    found = rules([*setup(2), relative, (A, ok(5, {"sessionId": "s2"})), *turn()])
    assert not v1_rules & set(found)


def test_update_for_an_unknown_tool_call_flips_between_versions():
    """v1: an update before the tool_call is a SHOULD breach (a warning); v2: "The first
    tool_call_update for a toolCallId creates the tool call"."""
    assert rules([*setup(1), tool_update("t9", status="completed")]) == ["tool-call-unknown"]
    v2 = tool_update("t9", status="completed", title="Run")
    assert rules([*setup(2), v2]) == []


def test_the_echo_of_the_prompt_flips_between_versions():
    """v2: the agent MUST report the inserted user message; v1 has no such message, and an
    echo (user_message_chunk during the turn) is fine too."""
    assert rules([*setup(1), *v1_turn()]) == []
    echo = upd({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}})
    assert (
        rules([*setup(1), v1_prompt(), echo, chunk(), (A, ok(10, {"stopReason": "end_turn"}))])
        == []
    )
    v2_without_echo = [*setup(2), v1_prompt(), (A, ok(10, {"messageId": "u1"}))]
    assert "user-message-missing" in rules(v2_without_echo)


def test_stop_reason_error_flips_between_versions():
    """v2 lists the error stop reason; v1's StopReason lacks it (not in the schema: a warning)."""
    assert rules([*setup(1), *v1_turn(10, "error")]) == ["not-in-schema"]
    assert "schema" not in rules([*setup(2), *turn(reason="error")])


def test_capability_elicitation():
    """ "Agents MUST NOT request a mode the Client has not advertised." (v1 Elicitation)"""
    ask = (
        A,
        req(7, "elicitation/create", {
            "sessionId": S, "mode": "form", "message": "Name?",
            "requestedSchema": {"type": "object", "properties": {}},
        }),
    )  # fmt: skip
    answer = (C, ok(7, {"action": "cancel"}))
    forms = {**V1_CLIENT_CAPS, "elicitation": {"form": {}}}
    check(
        "capability-elicitation",
        [*setup(1), ask, answer],
        [*setup(1, client=forms), ask, answer],
    )


def test_session_id_reused():
    """ "The Agent MUST respond with a unique Session ID that identifies this conversation"
    (v1 Session Setup)"""
    again = [(C, req(5, "session/new", {"cwd": "/", "mcpServers": []}))]
    check(
        "session-id-reused",
        [*setup(1), *again, (A, ok(5, {"sessionId": S}))],
        [*setup(1), *again, (A, ok(5, {"sessionId": "another"}))],
    )


def test_tool_call_duplicate():
    """toolCallId: "A unique identifier for this tool call within the session" (v1 Tool
    Calls): a second tool_call for it is a warning (clients treat it as an update)."""
    found = check(
        "tool-call-duplicate",
        [*setup(1), tool("t1"), tool("t1")],
        [*setup(1), tool("t1"), tool_update("t1", status="completed")],
    )
    assert found[0].level == Level.WARNING


def test_auth_terminal_method():
    """ "Clients MUST NOT pass a terminal method." (v1 Authentication)"""
    methods: list[dict[str, Any]] = [
        {"id": "login", "name": "Log in", "type": "terminal", "args": []},
        {"id": "key", "name": "API key"},
    ]
    auth = lambda m: (C, req(5, "authenticate", {"methodId": m}))  # noqa: E731
    caps = {**V1_CLIENT_CAPS, "auth": {"terminal": True}}
    check(
        "auth-terminal-method",
        [*setup(1, client=caps, auth=methods), auth("login"), (A, ok(5, {}))],
        [*setup(1, client=caps, auth=methods), auth("key"), (A, ok(5, {}))],
    )


def test_capability_auth_terminal():
    """ "Agents MUST advertise this method only when the client enabled its terminal
    authentication capability." (v1 schema, AuthMethodTerminal; v1 Authentication: "An Agent
    may advertise a terminal method only when this capability is true")."""
    methods: list[dict[str, Any]] = [{"id": "login", "name": "Log in", "type": "terminal"}]
    check(
        "capability-auth-terminal",
        setup(1, auth=methods),
        setup(1, client={**V1_CLIENT_CAPS, "auth": {"terminal": True}}, auth=methods),
    )
    assert rules(setup(1, auth=[{"id": "key", "name": "API key"}])) == []


def test_baseline_method_not_found():
    """ "As a baseline, all Agents MUST support session/new, session/prompt, session/cancel, and
    session/update." (v1 Initialization); a capability's method "is available" once it is
    advertised: -32601 for either is an error."""
    init = setup(1)[:2]
    new = (C, req(1, "session/new", {"cwd": "/", "mcpServers": []}))
    check(
        "baseline-method-not-found",
        [*init, new, (A, err(1, -32601))],
        [*init, new, (A, err(1, -32603))],
    )
    load = (C, req(3, "session/load", {"sessionId": S, "cwd": "/", "mcpServers": []}))
    advertised = setup(1, agent={"loadSession": True})
    assert rules([*advertised, load, (A, err(3, -32601))]) == ["baseline-method-not-found"]
    # not advertised: the client should not have asked (capability-session), the answer is fine
    assert rules([*setup(1), load, (A, err(3, -32601))]) == ["capability-session"]
    read = (A, req(4, "fs/read_text_file", {"sessionId": S, "path": "/a"}))
    assert rules([*setup(1), read, (C, err(4, -32601))]) == ["baseline-method-not-found"]


def test_list_cwd_filter():
    """ "Filter sessions by working directory [...] Only sessions with a matching cwd are
    returned." (v1 Session List); a listed session's cwd is "Always an absolute path"."""
    agent: dict[str, Any] = {"sessionCapabilities": {"list": {}}}
    ask = (C, req(3, "session/list", {"cwd": "/w"}))

    def listed(cwd: str) -> tuple[str, Any]:
        return (A, ok(3, {"sessions": [{"sessionId": "x", "cwd": cwd}]}))

    check(
        "list-cwd-filter",
        [*setup(1, agent=agent), ask, listed("/other")],
        [*setup(1, agent=agent), ask, listed("/w/")],
    )
    unfiltered = [*setup(1, agent=agent), (C, req(3, "session/list", {})), listed("rel")]
    assert rules(unfiltered) == ["path-not-absolute"]


def test_update_after_close():
    """ "The Agent MUST cancel any ongoing work for that session as if session/cancel had been
    called, then free the resources associated with the session." (v1 Session Setup, Closing a
    Session): an update after the close response is late (derived: a warning, once)."""
    agent: dict[str, Any] = {"sessionCapabilities": {"close": {}}}
    close = [(C, req(3, "session/close", {"sessionId": S})), (A, ok(3, {}))]
    chunk = upd({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}})
    found = check(
        "update-after-close",
        [*setup(1, agent=agent), *close, chunk, chunk],
        [*setup(1, agent=agent), chunk, *close],
    )
    assert [f.rule for f in found] == ["update-after-close"]


def test_rules_cite_the_section_their_sentence_is_in():
    """The compaction capability's sentence is only in the v1 draft page (v1-rules.md: the
    schema's CompactionUpdate, "v1 draft only in the docs"); the version rule is Version
    negotiation's; a permission never answered is JSON-RPC's "MUST reply"; a session no
    answer created is a derived rule (v1-rules.md J: "label them 'derived'")."""
    assert RULES["capability-compaction"].spec.startswith("v1 schema")
    assert "v1 draft" in RULES["capability-compaction"].spec
    assert RULES["initialize-version-higher"].spec == "v1 Initialization (Version negotiation)"
    assert RULES["permission-unanswered"].spec.startswith("JSON-RPC 2.0")
    assert RULES["unknown-session"].spec.startswith("derived")


def test_findings_say_what_happened():
    """v1's initialize names on a v2 connection are said to be v1's (not only that a newer
    schema may define them); a prompt cancelled by session/close (v1 Session Setup, Closing a
    Session: "as if session/cancel had been called") is said to be cancelled by the close."""
    init = {"protocolVersion": 2, "clientCapabilities": {}, "clientInfo": {"name": "c"}}
    found = findings([(C, req(0, "initialize", {**init, "capabilities": {}, "info": {}}))])
    said = [f.message for f in found if f.rule == "not-in-schema"]
    assert said and "clientCapabilities is v1's name for capabilities" in said[0]
    agent: dict[str, Any] = {"sessionCapabilities": {"close": {}}}
    prompt_ = (C, req(2, "session/prompt", {"sessionId": S, "prompt": []}))
    close = [(C, req(3, "session/close", {"sessionId": S})), (A, ok(3, {}))]
    ended = (A, ok(2, {"stopReason": "end_turn"}))
    found = findings([*setup(1, agent=agent), prompt_, *close, ended])
    assert [f.message for f in found if f.rule == "cancel-ended-without-cancelled"] == [
        f'session "{S}" was cancelled (by session/close) but ended with stop reason "end_turn"'
    ]


def test_a_finding_on_a_v1_connection_cites_a_v1_source():
    """A rule that can fire on a v1 connection names the v1 page (or the schema, JSON-RPC,
    the transport) its sentence comes from, not only a v2 page: a v1 finding sends its
    reader to the docs of the version they speak. The unknown method of a v1 agent, as
    Qwen Code 0.24 sends them (`craft/...`), cites v1 Extensibility."""
    neutral = ("ACP transport", "JSON-RPC 2.0", "ACP schema", "ACP unstable schema", "acp-proxy")
    for rule in CATALOG:
        if rule.scope is not Scope.V2:
            assert "v1" in rule.spec or rule.spec.startswith(neutral), (rule.id, rule.spec)
    custom = (A, req(1, "craft/drainMidTurnQueue", {"sessionId": S}))
    found, _ = findings([*setup(1), custom])  # (and unanswered: no answer here)
    assert found.rule == "unknown-method" and "v1 Extensibility" in found.spec
