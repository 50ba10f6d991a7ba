"""Examples: for a rule, the frames of a connection whose last breaks it, which
``acp-proxy rules RULE`` shows (tests/test_cli_conventions.py checks that each breaks its
rule); for a rule no frame of a recording can show, why not.

Kept apart from the catalog (:mod:`acp_proxy.core.rules`): the validator never loads them.
"""

from __future__ import annotations

import orjson

from acp_proxy.core.rules import RULES

__all__ = ["EXAMPLES", "NO_EXAMPLE", "Example", "explain_lines"]

#: A frame: the side that sends it, its line on the wire.
Example = tuple[tuple[str, str], ...]

# --- v2 (and every version): frames on a v2 connection ---------------------------------------

_INIT = (
    ("client", '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,'
     '"info":{"name":"editor","version":"1"},"capabilities":{}}}'),
    ("agent", '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,'
     '"info":{"name":"agent","version":"1"},"capabilities":{}}}'),
)  # fmt: skip
_NEW = '{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}'
_SESSION = (
    *_INIT,
    ("client", _NEW),
    ("agent", '{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}'),
)  # fmt: skip
_PROMPT = '{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}'  # noqa: E501
_TURN = (
    *_SESSION,
    ("client", _PROMPT),
    ("agent", '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"running"}}}'),  # noqa: E501
    ("agent", '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"user_message","messageId":"m1","content":[{"type":"text","text":"hi"}]}}}'),  # noqa: E501
    ("agent", '{"jsonrpc":"2.0","id":2,"result":{"messageId":"m1"}}'),
)  # fmt: skip


def _update(update: str) -> tuple[str, str]:
    """An agent's session/update of session s1."""
    return ("agent", '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1",'
            f'"update":{update}}}}}')  # fmt: skip


#: v2 rules, and rules of every version, with a v2 example.
_V2: dict[str, Example] = {
    "not-json": (("agent", "example agent: loading model..."),),
    "jsonrpc-version": (("client", '{"jsonrpc":"1.0","id":0,"method":"initialize","params":{}}'),),
    "invalid-id": (("client", '{"jsonrpc":"2.0","id":{"n":1},"method":"initialize","params":{}}'),),
    "before-initialize": (("client", _NEW),),
    "unexpected-response": (*_INIT, ("agent", '{"jsonrpc":"2.0","id":7,"result":{}}')),
    "invalid-error-object": (
        *_INIT,
        ("client", _NEW),
        ("agent", '{"jsonrpc":"2.0","id":1,"error":"boom"}'),
    ),
    "duplicate-request-id": (
        *_INIT,
        ("client", _NEW),
        ("client", _NEW),
    ),
    "unanswered-request": (
        *_INIT,
        ("client", _NEW),
    ),
    "schema": (
        *_INIT,
        ("client", _NEW.replace('"/w"', "5")),
    ),
    "unknown-method": (
        *_INIT,
        ("client", '{"jsonrpc":"2.0","id":1,"method":"session/frob","params":{}}'),
    ),
    "unknown-session": (
        *_SESSION,
        ("client", _PROMPT.replace('"s1"', '"s9"')),
    ),
    "prompt-empty": (*_SESSION, ("client", _PROMPT.replace('[{"type":"text","text":"hi"}]', "[]"))),
    "prompt-result-message-id": (*_TURN[:-1], ("agent", '{"jsonrpc":"2.0","id":2,"result":{}}')),
    "message-id-missing": (
        *_TURN,
        _update('{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hi"}}'),
    ),
    "stop-reason-unknown": (
        *_TURN,
        _update('{"sessionUpdate":"state_update","state":"idle","stopReason":"finished"}'),
    ),
    "state-unknown": (*_TURN, _update('{"sessionUpdate":"state_update","state":"sleeping"}')),
    "unknown-update": (*_TURN, _update('{"sessionUpdate":"frobnicated"}')),
    "notice-severity-unknown": (
        *_TURN,
        _update('{"sessionUpdate":"notice","severity":"loud","title":"Heads up"}'),
    ),
    "notice-title-missing": (
        *_TURN,
        _update('{"sessionUpdate":"notice","severity":"warning","title":""}'),
    ),
    "terminal-data-not-base64": (
        *_TURN,
        _update('{"sessionUpdate":"terminal_output_chunk","terminalId":"t1","data":"%%"}'),
    ),
    "usage-fields": (
        *_TURN,
        _update('{"sessionUpdate":"usage_update","used":-1,"size":200000}'),
    ),
    "invalid-message": (("client", '{"jsonrpc":"2.0","id":0}'),),
    "batch-empty": (*_INIT, ("client", "[]")),
    "wrong-direction": (*_INIT, ("agent", _NEW.replace('"id":1', '"id":9'))),
    "cancel-with-id": (
        *_TURN,
        (
            "client",
            '{"jsonrpc":"2.0","id":3,"method":"session/cancel","params":{"sessionId":"s1"}}',
        ),
    ),
    "user-message-missing": (*_TURN[:-2], _TURN[-1]),
    "idle-without-stop-reason": (
        *_TURN,
        _update('{"sessionUpdate":"state_update","state":"idle"}'),
    ),
    "plan-id-missing": (
        *_TURN,
        _update('{"sessionUpdate":"plan_update","plan":{"type":"items","entries":[]}}'),
    ),
    "tool-call-id-missing": (
        *_TURN,
        _update('{"sessionUpdate":"tool_call_update","title":"Read","status":"pending"}'),
    ),
    "terminal-id-missing": (
        *_TURN,
        _update('{"sessionUpdate":"terminal_output_chunk","data":"aGk="}'),
    ),
    "notice-severity-missing": (*_TURN, _update('{"sessionUpdate":"notice","title":"Heads up"}')),
    "message-content-shape": (
        *_TURN,
        _update('{"sessionUpdate":"agent_message_chunk","messageId":"m2","content":"Hi"}'),
    ),
    "usage-cost-fields": (
        *_TURN,
        _update('{"sessionUpdate":"usage_update","used":1,"size":2,"cost":{"amount":1}}'),
    ),
}


# --- v1: frames on a v1 connection -------------------------------------------------------

_V1: dict[str, Example] = {}

#: For a rule of v1 no frame of a recording can break, why not (``rules RULE`` says it).
_V1_NO_EXAMPLE: dict[str, str] = {}

#: For a rule of v2 or of every version no frame of a recording can break, why not.
_V2_NO_EXAMPLE: dict[str, str] = {}

#: For a rule, frames of a connection whose last breaks it (those before it are what it
#: needs: a handshake, a session, a turn).
EXAMPLES: dict[str, Example] = {**_V2, **_V1}

#: For a rule that has no example, why not.
NO_EXAMPLE: dict[str, str] = {**_V2_NO_EXAMPLE, **_V1_NO_EXAMPLE}


def explain_lines(rule_id: str) -> list[str] | None:
    """``acp-proxy rules RULE``: the rule's id, level, versions, source and sentence, and
    an example of a frame that breaks it; None for an unknown rule."""
    rule = RULES.get(rule_id)
    if rule is None:
        return None
    lines = [
        f"{rule.id}: {rule.level}, ACP versions: {rule.scope}",
        f"source: {rule.spec}",
        rule.description,
    ]
    example = EXAMPLES.get(rule.id)
    if example is None:
        why = NO_EXAMPLE.get(rule.id, "none in the catalog yet (see the tests of the validator)")
        return [*lines, f"example: {why}"]
    side, frame = example[-1]
    arrow = "client → agent" if side == "client" else "agent → client"
    before = [_method(line) for _, line in example[:-1]]
    methods = dict.fromkeys(m for m in before if m)
    after = f", after {', '.join(methods)}" if methods else ""
    return [*lines, f"example ({arrow}{after}):", f"  {frame}"]


def _method(line: str) -> str | None:
    """The method of a request or notification, else None (a response)."""
    value = orjson.loads(line)
    return value.get("method") if isinstance(value, dict) else None
