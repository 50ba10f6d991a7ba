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


# What the examples below add to a turn: a cancel, a permission request (two options), states,
# an error, a tool call; a resume; a session/new with a system prompt.
_CANCEL = ("client", '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}')
_ASK = (
    "agent",
    '{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1","title":"Run ls?","options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}',  # noqa: E501
)
_REQUIRES_ACTION = _update('{"sessionUpdate":"state_update","state":"requires_action"}')
_RUNNING = _update('{"sessionUpdate":"state_update","state":"running"}')
_ERROR = '{"code":-32603,"message":"model overloaded"}'
_TOOL = '{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"Read","status":"pending"}'
_RESUME = (
    '{"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"s1","cwd":"/w"}}'
)
_SYSTEM_PROMPT = _NEW.replace(
    "[]}", '[],"systemPrompt":{"mode":"append","content":[{"type":"text","text":"Be terse."}]}}'
)


def _compaction(compaction_id: str, status: str) -> tuple[str, str]:
    """An agent's compaction_update of session s1."""
    return _update(f'{{"sessionUpdate":"compaction_update","compactionId":"{compaction_id}",'
                   f'"status":"{status}"}}')  # fmt: skip


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
    "lone-surrogate": (
        *_TURN,
        _update(
            '{"sessionUpdate":"agent_message_chunk","messageId":"m2","content":{"type":"text","text":"cut \\ud83d"}}'  # noqa: E501
        ),
    ),
    "crlf-line-ending": (_INIT[0], (_INIT[1][0], _INIT[1][1] + "\r")),
    "blank-line": (*_INIT, ("agent", "")),
    "schema-lenient": (
        *_TURN,
        _update(
            '{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn","_meta":"x"}'
        ),
    ),
    "schema-reserved": (*_TURN, _update(_TOOL.replace('"pending"', '"queued"'))),
    "not-in-schema": (
        *_TURN,
        _update(_TOOL.replace('"pending"', '"completed","durationMs":120')),
    ),
    "unstable-feature": (
        *_SESSION,
        (
            "client",
            '{"jsonrpc":"2.0","id":2,"method":"session/fork","params":{"sessionId":"s1","cwd":"/w","mcpServers":[]}}',
        ),
    ),
    "mcp-legacy-method": (
        *_SESSION,
        ("agent", '{"jsonrpc":"2.0","id":0,"method":"mcp/connect","params":{"serverId":"srv1"}}'),
    ),
    "initialize-protocol-version": (
        _INIT[0],
        ("agent", _INIT[1][1].replace('"protocolVersion":2', '"protocolVersion":"2"')),
    ),
    "initialize-version-higher": (
        (
            "client",
            '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,"clientCapabilities":{}}}',
        ),
        _INIT[1],
    ),
    "resume-without-state": (
        *_INIT,
        ("client", _RESUME),
        ("agent", '{"jsonrpc":"2.0","id":1,"result":{}}'),
    ),
    "prompt-capability": (
        *_SESSION,
        (
            "client",
            _PROMPT.replace(
                '{"type":"text","text":"hi"}',
                '{"type":"image","data":"iVBORw0KGgo=","mimeType":"image/png"}',
            ),
        ),
    ),
    "prompt-message-id-reused": (
        *_TURN,
        _update('{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}'),
        ("client", _PROMPT.replace('"id":2', '"id":3')),
        _RUNNING,
        ("agent", '{"jsonrpc":"2.0","id":3,"result":{"messageId":"m1"}}'),
    ),
    "cancelled-prompt-error": (
        *_SESSION,
        ("client", _PROMPT),
        _RUNNING,
        _CANCEL,
        ("agent", f'{{"jsonrpc":"2.0","id":2,"error":{_ERROR}}}'),
    ),
    "state-missing": (*_TURN, _update('{"sessionUpdate":"state_update","stopReason":"end_turn"}')),
    "error-beside-stop-reason": (
        *_TURN,
        _update(
            f'{{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn","error":{_ERROR}}}'
        ),
    ),
    "idle-without-running": (
        *_SESSION,
        ("client", _PROMPT),
        *_TURN[-2:],
        _update('{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}'),
    ),
    "turn-still-running": (*_SESSION, ("client", _PROMPT), *_TURN[-2:], _RUNNING),
    "cancel-ended-with-error": (
        *_TURN,
        _CANCEL,
        _update(
            f'{{"sessionUpdate":"state_update","state":"idle","stopReason":"error","error":{_ERROR}}}'
        ),
    ),
    "cancel-ended-without-cancelled": (
        *_TURN,
        _CANCEL,
        _update('{"sessionUpdate":"state_update","state":"idle","stopReason":"end_turn"}'),
    ),
    "update-after-cancelled-idle": (
        *_TURN,
        _update(_TOOL),
        _CANCEL,
        _update('{"sessionUpdate":"state_update","state":"idle","stopReason":"cancelled"}'),
        _update(_TOOL.replace('"pending"', '"completed"')),
    ),
    "error-idle-unfinished-tools": (
        *_TURN,
        _update(_TOOL),
        _update(
            f'{{"sessionUpdate":"state_update","state":"idle","stopReason":"error","error":{_ERROR}}}'
        ),
    ),
    "permission-without-requires-action": (
        *_TURN,
        _ASK,
        (
            "client",
            '{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}',
        ),
    ),
    "permission-not-cancelled": (
        *_TURN,
        _REQUIRES_ACTION,
        _ASK,
        _CANCEL,
        (
            "client",
            '{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}',
        ),
    ),
    "permission-option-unknown": (
        *_TURN,
        _REQUIRES_ACTION,
        _ASK,
        (
            "client",
            '{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"yes"}}}',
        ),
    ),
    "prompt-error-after-insert": (
        *_SESSION,
        ("client", _PROMPT),
        _RUNNING,
        _update(
            '{"sessionUpdate":"user_message","messageId":"m1","content":[{"type":"text","text":"hi"}]}'
        ),
        ("agent", f'{{"jsonrpc":"2.0","id":2,"error":{_ERROR}}}'),
    ),
    "user-message-after-rejection": (
        *_SESSION,
        ("client", _PROMPT),
        ("agent", f'{{"jsonrpc":"2.0","id":2,"error":{_ERROR}}}'),
        _update(
            '{"sessionUpdate":"user_message","messageId":"m1","content":[{"type":"text","text":"hi"}]}'
        ),
    ),
    "running-not-reported": (
        *_TURN,
        _REQUIRES_ACTION,
        _ASK,
        (
            "client",
            '{"jsonrpc":"2.0","id":0,"result":{"outcome":{"outcome":"selected","optionId":"allow"}}}',
        ),
        _update(
            '{"sessionUpdate":"agent_message_chunk","messageId":"a1","content":{"type":"text","text":"Done."}}'
        ),
    ),
    "permission-unanswered": (*_TURN, _REQUIRES_ACTION, _ASK),
    "notice-during-replay": (
        *_INIT,
        ("client", _RESUME.replace('"/w"', '"/w","replayFrom":{"type":"start"}')),
        _update('{"sessionUpdate":"notice","severity":"info","title":"Resumed"}'),
    ),
    "compaction-field-missing": (
        *_TURN,
        _update('{"sessionUpdate":"compaction_update","compactionId":"c1"}'),
    ),
    "compaction-status-unknown": (*_TURN, _compaction("c1", "paused")),
    "compaction-id-reused": (
        *_TURN,
        _compaction("c1", "in_progress"),
        _compaction("c1", "completed"),
        _compaction("c1", "in_progress"),
    ),
    "compaction-chunk-outside-progress": (
        *_TURN,
        _compaction("c1", "in_progress"),
        _compaction("c1", "completed"),
        _update(
            '{"sessionUpdate":"compaction_summary_chunk","compactionId":"c1","content":{"type":"text","text":"Summary"}}'
        ),
    ),
    "capability-system-prompt": (*_INIT, ("client", _SYSTEM_PROMPT)),
    "system-prompt-empty": (
        _INIT[0],
        (
            "agent",
            _INIT[1][1].replace(
                '"capabilities":{}', '"capabilities":{"session":{"systemPrompt":{}}}'
            ),
        ),
        ("client", _SYSTEM_PROMPT.replace('[{"type":"text","text":"Be terse."}]', "[]")),
    ),
}


# --- v1: frames on a v1 connection -------------------------------------------------------

#: What a v1 editor usually advertises: it reads and writes files and runs terminals.
_CLIENT_V1 = '{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}'


def _init_v1(client: str = _CLIENT_V1, agent: str = "", auth: str = "[]") -> Example:
    """A v1 initialize and its result: the client advertising ``client``; the agent its
    prompt capabilities and the capabilities ``agent`` (``,"loadSession":true``), and the
    auth methods ``auth``."""
    return (
        ("client", '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":1,'
         f'"clientCapabilities":{client},"clientInfo":{{"name":"editor","version":"1"}}}}}}'),
        ("agent", '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":1,'
         f'"agentCapabilities":{{"promptCapabilities":{{}}{agent}}},'
         f'"agentInfo":{{"name":"agent","version":"1"}},"authMethods":{auth}}}}}'),
    )  # fmt: skip


def _call_v1(side: str, id_: int, method: str, params: str) -> tuple[str, str]:
    """A request of ``side``."""
    return (side, f'{{"jsonrpc":"2.0","id":{id_},"method":"{method}","params":{params}}}')


def _ok_v1(side: str, id_: int, result: str = "{}") -> tuple[str, str]:
    """A result ``side`` sends."""
    return (side, f'{{"jsonrpc":"2.0","id":{id_},"result":{result}}}')


def _session_v1(client: str = _CLIENT_V1, agent: str = "", result: str = "") -> Example:
    """initialize as :func:`_init_v1`, and session/new (the same as on v2) answered with
    session s1 and the fields ``result`` (``,"modes":...``)."""
    new = _ok_v1("agent", 1, f'{{"sessionId":"s1"{result}}}')
    return (*_init_v1(client, agent), ("client", _NEW), new)


_INIT_V1 = _init_v1()
_SESSION_V1 = _session_v1()
#: A v1 session whose prompt (the same session/prompt 2 as on v2) is running: what the
#: agent does during a turn comes after it.
_RUNNING_V1 = (*_SESSION_V1, ("client", _PROMPT))
_CHUNK_V1 = _update('{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hi"}}')
_END_TURN_V1 = _ok_v1("agent", 2, '{"stopReason":"end_turn"}')
_CANCEL_V1 = ("client", '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}')
_CANCELLED_V1 = _ok_v1("agent", 2, '{"stopReason":"cancelled"}')
_NEW_2_V1 = _NEW.replace('"id":1', '"id":2')
_MODES_V1 = (',"modes":{"currentModeId":"ask","availableModes":'
             '[{"id":"ask","name":"Ask"},{"id":"code","name":"Code"}]}')  # fmt: skip
_MODEL_V1 = ('{"id":"model","name":"Model","type":"select","currentValue":"fast","options":'
             '[{"value":"fast","name":"Fast"},{"value":"smart","name":"Smart"}]}')  # fmt: skip
_READ_V1 = '{"sessionId":"s1","path":"/w/README.md"}'
_CREATE_V1 = _call_v1(
    "agent", 0, "terminal/create", '{"sessionId":"s1","command":"npm","args":["test"]}'
)
_CREATED_V1 = _ok_v1("client", 0, '{"terminalId":"term_1"}')
_TERMINAL_V1 = '{"sessionId":"s1","terminalId":"term_1"}'
_LISTING_V1 = ',"sessionCapabilities":{"list":{},"delete":{}}'
_LISTED_V1 = '{"sessions":[{"sessionId":"s1","cwd":"/w"}]'
_LOAD_V1 = '{"sessionId":"s1","cwd":"/w","mcpServers":[]}'
_HTTP_MCP_V1 = '[{"type":"http","name":"docs","url":"https://mcp.example.com/mcp","headers":[]}]'
_PERMISSION_V1 = (
    '{"sessionId":"s1","toolCall":{"toolCallId":"t1"},'
    '"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}'
)
_SET_MODEL_V1 = '{"sessionId":"s1","configId":"model","value":"gpt-4"}'
_ELICIT_V1 = (
    '{"sessionId":"s1","mode":"form","message":"Which branch?",'
    '"requestedSchema":{"type":"object","properties":{"branch":{"type":"string"}}}}'
)


def _tool_call_v1(status: str) -> tuple[str, str]:
    """The agent announces tool call t1 (reading a file) with ``status``."""
    return _update('{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read README.md",'
                   f'"kind":"read","status":"{status}"}}')  # fmt: skip


#: v1 rules with a v1 example.
_V1: dict[str, Example] = {
    "batch": (*_INIT_V1, ("client", f"[{_NEW},{_NEW_2_V1}]")),
    "capability-fs": (
        *_session_v1(client="{}"),
        ("client", _PROMPT),
        _call_v1("agent", 0, "fs/read_text_file", _READ_V1),
    ),
    "capability-terminal": (
        *_session_v1(client='{"fs":{"readTextFile":true,"writeTextFile":true}}'),
        ("client", _PROMPT),
        _CREATE_V1,
    ),
    "capability-config-boolean": _session_v1(
        result=',"configOptions":[{"id":"fast","name":"Fast mode","type":"boolean",'
        '"currentValue":false}]'
    ),
    "capability-notices": (
        *_RUNNING_V1,
        _update('{"sessionUpdate":"notice","severity":"warning","title":"Rate limited"}'),
    ),
    "capability-compaction": (
        *_RUNNING_V1,
        _update('{"sessionUpdate":"compaction_update","compactionId":"c1","status":"in_progress"}'),
    ),
    "capability-session": (*_INIT_V1, _call_v1("client", 1, "session/load", _LOAD_V1)),
    "capability-additional-directories": (
        *_INIT_V1,
        ("client", _NEW.replace("[]", '[],"additionalDirectories":["/lib"]')),
    ),
    "capability-mcp-transport": (
        *_INIT_V1,
        ("client", _NEW.replace("[]", _HTTP_MCP_V1)),
    ),
    "path-not-absolute": (*_INIT_V1, ("client", _NEW.replace('"/w"', '"w"'))),
    "prompt-overlap": (*_RUNNING_V1, ("client", _PROMPT.replace('"id":2', '"id":3'))),
    "cancel-answered-with-error": (
        *_RUNNING_V1,
        _CHUNK_V1,
        _CANCEL_V1,
        ("agent", '{"jsonrpc":"2.0","id":2,"error":{"code":-32603,"message":"Aborted"}}'),
    ),
    "cancelled-without-cancel": (*_RUNNING_V1, _CHUNK_V1, _CANCELLED_V1),
    "update-after-cancelled": (*_RUNNING_V1, _CANCEL_V1, _CANCELLED_V1, _CHUNK_V1),
    "line-not-1-based": (
        *_RUNNING_V1,
        _call_v1("agent", 0, "fs/read_text_file", _READ_V1.replace("}", ',"line":0,"limit":40}')),
    ),
    "auth-method-duplicate": _init_v1(
        auth='[{"id":"api-key","name":"API key"},{"id":"api-key","name":"API key (env)"}]'
    ),
    "mode-current-unknown": _session_v1(result=_MODES_V1.replace('Id":"ask"', 'Id":"architect"')),
    "config-current-unknown": _session_v1(
        result=',"configOptions":[' + _MODEL_V1.replace('Value":"fast"', 'Value":"gpt-4"') + "]"
    ),
    "initialize-again": (*_SESSION_V1, ("client", _INIT_V1[0][1].replace('"id":0', '"id":2'))),
    "cancel-request-unknown": (  # the client cancels the agent's request, not one of its own
        *_RUNNING_V1,
        _call_v1("agent", 5, "session/request_permission", _PERMISSION_V1),
        ("client", '{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":5}}'),
    ),
    "cancel-request-error-code": (
        *_RUNNING_V1,
        _call_v1("agent", 0, "fs/read_text_file", _READ_V1),
        ("agent", '{"jsonrpc":"2.0","method":"$/cancel_request","params":{"requestId":0}}'),
        ("client", '{"jsonrpc":"2.0","id":0,"error":{"code":-32603,"message":"Internal error"}}'),
    ),
    "list-cursor-unknown": (  # the client decoded the cursor and moved its offset on
        *_init_v1(agent=_LISTING_V1),
        _call_v1("client", 1, "session/list", "{}"),
        _ok_v1("agent", 1, _LISTED_V1 + ',"nextCursor":"eyJvZmZzZXQiOjF9"}'),
        _call_v1("client", 2, "session/list", '{"cursor":"eyJvZmZzZXQiOjJ9"}'),
    ),
    "list-cwd-filter": (
        *_init_v1(agent=_LISTING_V1),
        _call_v1("client", 1, "session/list", '{"cwd":"/home"}'),
        _ok_v1("agent", 1, _LISTED_V1 + "}"),
    ),
    "baseline-method-not-found": (
        *_INIT_V1,
        ("client", _NEW),
        ("agent", '{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}}'),
    ),
    "update-after-close": (
        *_session_v1(agent=',"sessionCapabilities":{"close":{}}'),
        _call_v1("client", 2, "session/close", '{"sessionId":"s1"}'),
        _ok_v1("agent", 2),
        _CHUNK_V1,
    ),
    "deleted-session-listed": (
        *_init_v1(agent=_LISTING_V1),
        _call_v1("client", 1, "session/delete", '{"sessionId":"s1"}'),
        _ok_v1("agent", 1),
        _call_v1("client", 2, "session/list", "{}"),
        _ok_v1("agent", 2, _LISTED_V1 + "}"),
    ),
    "prompt-end-turn-open-tools": (*_RUNNING_V1, _tool_call_v1("in_progress"), _END_TURN_V1),
    "tool-call-unknown": (
        *_RUNNING_V1,
        _update('{"sessionUpdate":"tool_call_update","toolCallId":"t1","status":"completed"}'),
    ),
    "terminal-unknown": (*_RUNNING_V1, _call_v1("agent", 0, "terminal/output", _TERMINAL_V1)),
    "terminal-released": (
        *_RUNNING_V1,
        _CREATE_V1,
        _CREATED_V1,
        _call_v1("agent", 1, "terminal/release", _TERMINAL_V1),
        _ok_v1("client", 1),
        _call_v1("agent", 2, "terminal/output", _TERMINAL_V1),
    ),
    # found at the end of the connection, at the terminal/create response
    "terminal-unreleased": (*_RUNNING_V1, _CREATE_V1, _CREATED_V1),
    "load-replay-after-response": (
        *_init_v1(agent=',"loadSession":true'),
        _call_v1("client", 1, "session/load", _LOAD_V1),
        _ok_v1("agent", 1),
        _update('{"sessionUpdate":"user_message_chunk","content":{"type":"text","text":"hi"}}'),
    ),
    "resume-replayed-history": (
        *_init_v1(agent=',"sessionCapabilities":{"resume":{}}'),
        _call_v1("client", 1, "session/resume", '{"sessionId":"s1","cwd":"/w"}'),
        _CHUNK_V1,
    ),
    "mode-unknown": (
        *_session_v1(result=_MODES_V1),
        _call_v1("client", 2, "session/set_mode", '{"sessionId":"s1","modeId":"architect"}'),
    ),
    "config-value-unknown": (
        *_session_v1(result=f',"configOptions":[{_MODEL_V1}]'),
        _call_v1("client", 2, "session/set_config_option", _SET_MODEL_V1),
    ),
    "capability-elicitation": (
        *_RUNNING_V1,
        _call_v1("agent", 0, "elicitation/create", _ELICIT_V1),
    ),
    "session-id-reused": (
        *_SESSION_V1,
        ("client", _NEW_2_V1),
        _ok_v1("agent", 2, '{"sessionId":"s1"}'),
    ),
    "tool-call-duplicate": (*_RUNNING_V1, _tool_call_v1("pending"), _tool_call_v1("completed")),
    "capability-auth-terminal": _init_v1(
        auth='[{"id":"login","name":"Log in","type":"terminal","args":["--login"]}]'
    ),
    "auth-terminal-method": (
        *_init_v1(
            client=_CLIENT_V1[:-1] + ',"auth":{"terminal":true}}',
            auth='[{"id":"login","name":"Log in","type":"terminal","args":["--login"]}]',
        ),
        _call_v1("client", 1, "authenticate", '{"methodId":"login"}'),
    ),
    "auth-method-unknown": (
        *_init_v1(auth='[{"id":"api-key","name":"API key"},{"id":"oauth","name":"Log in"}]'),
        _call_v1("client", 1, "authenticate", '{"methodId":"github"}'),
    ),
}

#: For a rule of v1 no frame of a recording can break, why not (``rules RULE`` says it).
_V1_NO_EXAMPLE: dict[str, str] = {}

#: For a rule of v2 or of every version no frame of a recording can break, why not.
_V2_NO_EXAMPLE: dict[str, str] = {
    "not-utf8": (
        "none shown: a line that is not UTF-8 cannot be printed as text (a recording holds its "
        "bytes in base64)"
    ),
    "oversized-frame": (
        "none shown: the line is longer than the proxy observes (64 MiB unless "
        "ACP_PROXY_MAX_FRAME says less): a recording holds it whole, in base64 (with "
        "--redact, its beginning)"
    ),
    "validator-error": "none: it reports a failure of the validator itself, not of a frame",
    "compaction-unfinished": (
        "none at a frame: it is found when the connection ends with a compaction still "
        "in_progress, and names no frame"
    ),
}

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
