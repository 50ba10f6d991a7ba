"""The frames the rules' examples are built of: a v2 handshake, a session, a turn, an
agent's update; their v1 counterparts. Each rule's example is defined with the rule, beside
its check (:mod:`acp_proxy.core.validator_base`, ``validator_v2``, ``validator_v1``), as
these frames and the one that breaks it; ``acp-proxy rules RULE`` shows the last.
"""

from __future__ import annotations

from acp_proxy.core.findings import Example

__all__ = [
    "ASK",
    "CANCEL",
    "CANCELLED_V1",
    "CANCEL_V1",
    "CHUNK_V1",
    "CLIENT_V1",
    "CREATED_V1",
    "CREATE_V1",
    "ELICIT_V1",
    "END_TURN_V1",
    "ERROR",
    "HTTP_MCP_V1",
    "INIT",
    "INIT_V1",
    "LISTED_V1",
    "LISTING_V1",
    "LOAD_V1",
    "MODEL_V1",
    "MODES_V1",
    "NEW",
    "NEW_2_V1",
    "PERMISSION_V1",
    "PROMPT",
    "READ_V1",
    "REQUIRES_ACTION",
    "RESUME",
    "RUNNING",
    "RUNNING_V1",
    "SESSION",
    "SESSION_V1",
    "SET_MODEL_V1",
    "SYSTEM_PROMPT",
    "TERMINAL_V1",
    "TOOL",
    "TURN",
    "call_v1",
    "compaction",
    "init_v1",
    "ok_v1",
    "session_v1",
    "tool_call_v1",
    "update",
]

# --- v2 (and every version): frames on a v2 connection ---------------------------------------

INIT = (
    ("client", '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2,'
     '"info":{"name":"editor","version":"1"},"capabilities":{}}}'),
    ("agent", '{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2,'
     '"info":{"name":"agent","version":"1"},"capabilities":{}}}'),
)  # fmt: skip
NEW = '{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/w","mcpServers":[]}}'
SESSION = (
    *INIT,
    ("client", NEW),
    ("agent", '{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s1"}}'),
)  # fmt: skip
PROMPT = '{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s1","prompt":[{"type":"text","text":"hi"}]}}'  # noqa: E501
TURN = (
    *SESSION,
    ("client", PROMPT),
    ("agent", '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"state_update","state":"running"}}}'),  # noqa: E501
    ("agent", '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"user_message","messageId":"m1","content":[{"type":"text","text":"hi"}]}}}'),  # noqa: E501
    ("agent", '{"jsonrpc":"2.0","id":2,"result":{"messageId":"m1"}}'),
)  # fmt: skip


def update(update: str) -> tuple[str, str]:
    """An agent's session/update of session s1."""
    return ("agent", '{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1",'
            f'"update":{update}}}}}')  # fmt: skip


# What the examples below add to a turn: a cancel, a permission request (two options), states,
# an error, a tool call; a resume; a session/new with a system prompt.
CANCEL = ("client", '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}')
ASK = (
    "agent",
    '{"jsonrpc":"2.0","id":0,"method":"session/request_permission","params":{"sessionId":"s1","title":"Run ls?","options":[{"optionId":"allow","name":"Allow","kind":"allow_once"},{"optionId":"reject","name":"Reject","kind":"reject_once"}]}}',  # noqa: E501
)
REQUIRES_ACTION = update('{"sessionUpdate":"state_update","state":"requires_action"}')
RUNNING = update('{"sessionUpdate":"state_update","state":"running"}')
ERROR = '{"code":-32603,"message":"model overloaded"}'
TOOL = '{"sessionUpdate":"tool_call_update","toolCallId":"t1","title":"Read","status":"pending"}'
RESUME = '{"jsonrpc":"2.0","id":1,"method":"session/resume","params":{"sessionId":"s1","cwd":"/w"}}'
SYSTEM_PROMPT = NEW.replace(
    "[]}", '[],"systemPrompt":{"mode":"append","content":[{"type":"text","text":"Be terse."}]}}'
)


def compaction(compaction_id: str, status: str) -> tuple[str, str]:
    """An agent's compaction_update of session s1."""
    return update(f'{{"sessionUpdate":"compaction_update","compactionId":"{compaction_id}",'
                   f'"status":"{status}"}}')  # fmt: skip


# --- v1: frames on a v1 connection -------------------------------------------------------

#: What a v1 editor usually advertises: it reads and writes files and runs terminals.
CLIENT_V1 = '{"fs":{"readTextFile":true,"writeTextFile":true},"terminal":true}'


def init_v1(client: str = CLIENT_V1, agent: str = "", auth: str = "[]") -> Example:
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


def call_v1(side: str, id_: int, method: str, params: str) -> tuple[str, str]:
    """A request of ``side``."""
    return (side, f'{{"jsonrpc":"2.0","id":{id_},"method":"{method}","params":{params}}}')


def ok_v1(side: str, id_: int, result: str = "{}") -> tuple[str, str]:
    """A result ``side`` sends."""
    return (side, f'{{"jsonrpc":"2.0","id":{id_},"result":{result}}}')


def session_v1(client: str = CLIENT_V1, agent: str = "", result: str = "") -> Example:
    """initialize as :func:`init_v1`, and session/new (the same as on v2) answered with
    session s1 and the fields ``result`` (``,"modes":...``)."""
    new = ok_v1("agent", 1, f'{{"sessionId":"s1"{result}}}')
    return (*init_v1(client, agent), ("client", NEW), new)


INIT_V1 = init_v1()
SESSION_V1 = session_v1()
#: A v1 session whose prompt (the same session/prompt 2 as on v2) is running: what the
#: agent does during a turn comes after it.
RUNNING_V1 = (*SESSION_V1, ("client", PROMPT))
CHUNK_V1 = update('{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hi"}}')
END_TURN_V1 = ok_v1("agent", 2, '{"stopReason":"end_turn"}')
CANCEL_V1 = ("client", '{"jsonrpc":"2.0","method":"session/cancel","params":{"sessionId":"s1"}}')
CANCELLED_V1 = ok_v1("agent", 2, '{"stopReason":"cancelled"}')
NEW_2_V1 = NEW.replace('"id":1', '"id":2')
MODES_V1 = (',"modes":{"currentModeId":"ask","availableModes":'
             '[{"id":"ask","name":"Ask"},{"id":"code","name":"Code"}]}')  # fmt: skip
MODEL_V1 = ('{"id":"model","name":"Model","type":"select","currentValue":"fast","options":'
             '[{"value":"fast","name":"Fast"},{"value":"smart","name":"Smart"}]}')  # fmt: skip
READ_V1 = '{"sessionId":"s1","path":"/w/README.md"}'
CREATE_V1 = call_v1(
    "agent", 0, "terminal/create", '{"sessionId":"s1","command":"npm","args":["test"]}'
)
CREATED_V1 = ok_v1("client", 0, '{"terminalId":"term_1"}')
TERMINAL_V1 = '{"sessionId":"s1","terminalId":"term_1"}'
LISTING_V1 = ',"sessionCapabilities":{"list":{},"delete":{}}'
LISTED_V1 = '{"sessions":[{"sessionId":"s1","cwd":"/w"}]'
LOAD_V1 = '{"sessionId":"s1","cwd":"/w","mcpServers":[]}'
HTTP_MCP_V1 = '[{"type":"http","name":"docs","url":"https://mcp.example.com/mcp","headers":[]}]'
PERMISSION_V1 = (
    '{"sessionId":"s1","toolCall":{"toolCallId":"t1"},'
    '"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}'
)
SET_MODEL_V1 = '{"sessionId":"s1","configId":"model","value":"gpt-4"}'
ELICIT_V1 = (
    '{"sessionId":"s1","mode":"form","message":"Which branch?",'
    '"requestedSchema":{"type":"object","properties":{"branch":{"type":"string"}}}}'
)


def tool_call_v1(status: str) -> tuple[str, str]:
    """The agent announces tool call t1 (reading a file) with ``status``."""
    return update('{"sessionUpdate":"tool_call","toolCallId":"t1","title":"Read README.md",'
                   f'"kind":"read","status":"{status}"}}')  # fmt: skip
