"""The unstable surface of ACP: what only the unstable schemas define is known (an ``info``
finding naming it, checked against the unstable schema), and what those methods do is
followed (a fork opens a session, a load replays, proxy chains, MCP over ACP). Each case
beside a broken twin that is still flagged."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from acp_proxy.core.protocol import UNSTABLE_METHODS, official_schema
from acp_proxy.core.rules import RULES, Level
from acp_proxy.core.schema import schema_sources
from acp_proxy.core.unstable import feature_named, surface_for
from tests.exchanges import A, C, Frames, S, findings, next_hop, ok, proxy_setup, req, setup, upd

FORK: dict[str, Any] = {"sessionCapabilities": {"fork": {}}}
NEW = "sess_fork"


def loud(frames: Frames) -> list[str]:
    """The rules of the findings that are not info."""
    return [f.rule for f in findings(frames) if f.level != Level.INFO]


def infos(frames: Frames) -> list[str]:
    return [feature_named(f.message) for f in findings(frames) if f.level == Level.INFO]


def v1_turn(session: str, id_: int = 10) -> Frames:
    prompt = {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok"}}
    return [
        (C, req(id_, "session/prompt", prompt)),
        upd(chunk, session),
        (A, ok(id_, {"stopReason": "end_turn"})),
    ]


def fork(id_: int = 5, result: str = NEW, **params: Any) -> Frames:
    asked = {"sessionId": S, "cwd": "/", "mcpServers": [], **params}
    return [(C, req(id_, "session/fork", asked)), (A, ok(id_, {"sessionId": result}))]


def test_unstable_feature():
    """A method, capability and field only the unstable v1 schema defines: an info finding
    each, once per connection, and nothing louder; info never fails ``validate``."""
    frames = [*setup(1, agent=FORK), *fork(), *v1_turn(NEW), *v1_turn(NEW, 11)]
    assert loud(frames) == []
    assert infos(frames) == ["SessionCapabilities.fork", "session/fork"]
    assert RULES["unstable-feature"].level == Level.INFO


def test_fork_opens_a_session():
    """ "Unique identifier for the newly created forked session" (ForkSessionResponse): the
    fork's result names a session this connection may prompt; a session no fork created is
    still unknown."""
    clean = [*setup(1, agent=FORK), *fork(), *v1_turn(NEW)]
    assert loud(clean) == []
    broken = [*setup(1, agent=FORK), *fork(), *v1_turn("sess_other")]
    assert "unknown-session" in loud(broken)


def test_fork_without_the_capability():
    """ "Only available if the Agent supports the `session.fork` capability"
    (ForkSessionRequest): as for the other session methods, capability-session fires."""
    found = loud([*setup(1), *fork(), *v1_turn(NEW)])
    assert found == ["capability-session"]


def test_malformed_unstable_message_is_checked_against_the_unstable_schema():
    """A fork without its required cwd is a schema error, from the unstable schema."""
    frames = [*setup(1, agent=FORK), (C, req(5, "session/fork", {"sessionId": S}))]
    frames.append((A, ok(5, {"sessionId": NEW})))
    found = [f for f in findings(frames) if f.rule == "schema"]
    assert [f.message for f in found] == [
        "session/fork params.cwd: required field missing (ForkSessionRequest)"
    ]
    assert found[0].spec == f"ACP v1 unstable schema {schema_sources().tag(1, True)}"


def test_unknown_variant_in_neither_schema_stays_flagged():
    """Something in neither schema is what it was: an unknown method is still a warning."""
    asked = (C, req(5, "session/frobnicate", {"sessionId": S}))
    assert loud([*setup(1), asked, (A, ok(5, {}))]) == ["unknown-method"]


def test_prompt_response_usage_and_acp_mcp_server():
    """What claude-agent-acp sends: PromptResponse.usage and an MCP server of type "acp"
    (with the agent's mcpCapabilities.acp), known and clean; malformed usage is flagged (lenient:
    the SDKs replace it with its default)."""
    caps = {"mcpCapabilities": {"acp": True}}
    server = {"type": "acp", "name": "tools", "serverId": "srv1"}
    new = (C, req(1, "session/new", {"cwd": "/", "mcpServers": [server]}))
    frames = [*setup(1, agent=caps)]
    frames[2] = new
    usage = {"inputTokens": 1, "outputTokens": 2, "totalTokens": 3}
    turn = v1_turn(S)
    turn[-1] = (A, ok(10, {"stopReason": "end_turn", "usage": usage}))
    assert loud([*frames, *turn]) == []
    assert infos([*frames, *turn]) == [
        "McpCapabilities.acp",
        'McpServer type "acp"',
        "PromptResponse.usage",
    ]
    turn[-1] = (A, ok(10, {"stopReason": "end_turn", "usage": {"totalTokens": "3"}}))
    assert "schema-lenient" in loud([*frames, *turn])  # usage: x-deserialize-default-on-error
    frames[1] = (A, ok(0, {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}))
    assert loud([*frames, *v1_turn(S)]) == ["capability-mcp-transport"]


def test_load_replays_what_was_announced():
    """ "The Agent MUST replay the entire conversation" (v1 Session Setup, Loading
    Sessions): a tool call announced before the load is announced again without
    tool-call-duplicate, and a second load of the same session is as clean; a tool call
    announced twice within a turn is still flagged."""
    tool = upd({"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read"})
    done = upd({"sessionUpdate": "tool_call_update", "toolCallId": "t1", "status": "completed"})
    user = upd({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}})
    turn = v1_turn(S)
    first = [*turn[:2], tool, done, turn[2]]
    load = {"sessionId": S, "cwd": "/", "mcpServers": []}

    def loaded(id_: int) -> Frames:
        return [(C, req(id_, "session/load", load)), user, tool, done, (A, ok(id_, {}))]

    frames = [*setup(1, agent={"loadSession": True}), *first, *loaded(20), *loaded(21)]
    assert loud([*frames, *v1_turn(S, 30)]) == []
    twice = [*setup(1, agent={"loadSession": True}), *turn[:2], tool, tool, done, turn[2]]
    assert loud(twice) == ["tool-call-duplicate"]


def test_resume_and_close_keep_their_rules():
    """session/resume and session/close, checked again: with the capabilities they are
    clean; history replayed during a resume is still flagged."""
    caps: dict[str, Any] = {"sessionCapabilities": {"resume": {}, "close": {}}}
    resume = (C, req(5, "session/resume", {"sessionId": S, "cwd": "/"}))
    close = (C, req(6, "session/close", {"sessionId": S}))
    clean = [*setup(1, agent=caps), resume, (A, ok(5, {})), close, (A, ok(6, {}))]
    assert loud(clean) == []
    chunk = upd({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "x"}})
    replayed = [*setup(1, agent=caps), resume, chunk, (A, ok(5, {}))]
    assert loud(replayed) == ["resume-replayed-history"]
    assert loud([*setup(1), close, (A, ok(6, {}))]) == ["capability-session"]


def test_proxy_initialize_opens_the_connection():
    """ "The params and the response are the same as for `initialize`"
    (InitializeProxyRequest): the version is negotiated, session/new is clean after it, and
    not before it."""
    assert loud([*proxy_setup(), *v1_turn(S)]) == []
    assert infos(proxy_setup()) == ["proxy/initialize"]
    assert "before-initialize" in loud(setup(1)[2:])


def test_proxy_successor_checks_its_inner_message():
    """ "The envelope wraps one request: `method` and `params` are the wrapped request's
    method and params" (ProxySuccessorRequest): the next hop is checked as a connection of
    its own; a malformed inner prompt, or one to a session the next hop never created, is
    flagged and says so."""
    good = {"sessionId": "inner", "prompt": [{"type": "text", "text": "hi"}]}
    assert loud([*proxy_setup(), *next_hop(good)]) == []
    found = [f for f in findings([*proxy_setup(), *next_hop({"sessionId": "inner"})])]
    bad = [f for f in found if f.level != Level.INFO]
    assert [f.rule for f in bad] == ["schema"]
    assert bad[0].message.startswith("next hop (proxy/successor): session/prompt params.prompt")
    stray = {"sessionId": "nowhere", "prompt": [{"type": "text", "text": "hi"}]}
    assert "unknown-session" in loud([*proxy_setup(), *next_hop(stray)])


def test_mcp_message():
    """mcp/message as the shipped unstable schema defines it (serverId, requestId, method)
    is clean; without its requestId it is a schema error."""
    params = {"serverId": "srv1", "requestId": "r1", "method": "tools/list"}
    clean = [*setup(1), (A, req(7, "mcp/message", params)), (C, ok(7, {"result": {}}))]
    assert loud(clean) == []
    del params["requestId"]
    broken = [*setup(1), (A, req(7, "mcp/message", params)), (C, ok(7, {"result": {}}))]
    assert loud(broken) == ["schema"]


def test_mcp_legacy_method():
    """The older draft the Python SDK 0.12.1 sends (mcp/connect returning a connectionId,
    mcp/message and mcp/disconnect naming it) is a warning per method that names the
    mismatch, never an error."""
    frames = [
        *setup(1),
        (A, req(7, "mcp/connect", {"serverId": "srv1"})),
        (C, ok(7, {"connectionId": "c1"})),
        (A, req(8, "mcp/message", {"connectionId": "c1", "method": "tools/list"})),
        (C, ok(8, {"tools": []})),
        (A, req(9, "mcp/message", {"connectionId": "c1", "method": "tools/list"})),
        (C, ok(9, {"tools": []})),
        (A, req(10, "mcp/disconnect", {"connectionId": "c1"})),
        (C, ok(10, {})),
    ]
    found = [f for f in findings(frames) if f.level != Level.INFO]
    assert [f.rule for f in found] == ["mcp-legacy-method"] * 3
    assert all(f.level == Level.WARNING for f in found)
    assert "serverId and requestId" in found[0].message


@pytest.mark.parametrize("version", [1, 2])
def test_unstable_methods_match_the_schema(version: int):
    """The unstable method table is the unstable schema's: the methods only it defines,
    each sent by the side its x-side does not name (proxy methods: either)."""
    surface = surface_for(version)
    assert set(UNSTABLE_METHODS) == set(surface.methods)
    defs = official_schema(version, unstable=True)["$defs"]
    for name, node in defs.items():
        method = node.get("x-method")
        if method not in UNSTABLE_METHODS or node.get("x-side") == "proxy":
            continue
        sender = UNSTABLE_METHODS[method][0]
        if sender != "any":
            assert sender != node["x-side"], (name, method)


@pytest.mark.parametrize("version", [1, 2])
def test_stable_traffic_uses_nothing_unstable(version: int):
    """A finder finds nothing in what the stable schema defines (the setup frames)."""
    for _, message in setup(version):
        raw = orjson.dumps(message)
        assert orjson.loads(raw) == message
    assert [f for f in findings(setup(version)) if f.level == Level.INFO] == []
