"""ACP exchanges for the validator tests: frames built by hand (a request, a notification,
an update, a turn), fed to the validator the short way for streamed chunks and the long
way. The core alone: that every reader agrees on what the validator finds is
tests/readers/test_agreement.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from hypothesis import strategies as st

from acp_proxy.core.framing import parse_frame
from acp_proxy.core.rules import RULES
from acp_proxy.core.schema import schema_sources
from acp_proxy.core.validator import Validator, Violation
from acp_proxy.transcript.records import (
    frame_record,
    start_record,
)

C, A = "client", "agent"
S = "sess_1"
Frames = list[tuple[str, Any]]


def req(id_: Any, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": id_, "method": method}
    if params is not None:
        message["params"] = params
    return message


def note(method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return message


def ok(id_: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def err(id_: Any, code: int = -32603, message: str = "failed") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": message}}


def upd(update: dict[str, Any], session: str = S) -> tuple[str, dict[str, Any]]:
    return (A, note("session/update", {"sessionId": session, "update": update}))


def state(value: Any, **extra: Any) -> tuple[str, dict[str, Any]]:
    return upd({"sessionUpdate": "state_update", "state": value, **extra})


def idle(reason: Any = "end_turn", **extra: Any) -> tuple[str, dict[str, Any]]:
    return state("idle", stopReason=reason, **extra)


OPTIONS = [{"optionId": "allow", "name": "Allow", "kind": "allow_once"}]


#: What a v1 client like Zed advertises.
V1_CLIENT = {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True}


def setup(
    version: int = 2,
    prompt_caps: dict[str, Any] | None = None,
    client: dict[str, Any] | None = None,
    agent: dict[str, Any] | None = None,
    auth: list[dict[str, Any]] | None = None,
    new_result: dict[str, Any] | None = None,
) -> Frames:
    """initialize and session/new, as a well-behaved pair does them (v1: with what each side
    advertises, and what session/new returns besides the sessionId)."""
    auth = auth if auth is not None else []
    if version == 2:
        caps = {"session": {"prompt": prompt_caps if prompt_caps is not None else {}}}
        result = {"protocolVersion": 2, "info": {"name": "a", "version": "1"}, "capabilities": caps}
        init = {"protocolVersion": 2, "info": {"name": "c", "version": "1"}, "capabilities": {}}
    else:
        agent_caps = {"promptCapabilities": prompt_caps or {}, **(agent or {})}
        result = {"protocolVersion": 1, "agentCapabilities": agent_caps, "authMethods": auth}
        init = {
            "protocolVersion": 1,
            "clientCapabilities": client if client is not None else V1_CLIENT,
            "clientInfo": {"name": "c", "version": "1"},
        }
    return [
        (C, req(0, "initialize", init)),
        (A, ok(0, result)),
        (C, req(1, "session/new", {"cwd": "/", "mcpServers": []})),
        (A, ok(1, {"sessionId": S, **(new_result or {})})),
    ]


def prompt(id_: Any = 10, blocks: Any = None) -> tuple[str, dict[str, Any]]:
    blocks = blocks if blocks is not None else [{"type": "text", "text": "hi"}]
    return (C, req(id_, "session/prompt", {"sessionId": S, "prompt": blocks}))


def user_message(message_id: str = "u1") -> tuple[str, dict[str, Any]]:
    return upd(
        {
            "sessionUpdate": "user_message",
            "messageId": message_id,
            "content": [{"type": "text", "text": "hi"}],
        }
    )


def turn(id_: Any = 10, message_id: str = "u1", reason: str = "end_turn") -> Frames:
    """A whole, clean prompt turn."""
    return [
        prompt(id_),
        state("running"),
        user_message(message_id),
        (A, ok(id_, {"messageId": message_id})),
        upd(
            {
                "sessionUpdate": "agent_message_chunk",
                "messageId": f"a-{message_id}",
                "content": {"type": "text", "text": "ok"},
            }
        ),
        idle(reason),
    ]


def proxy_setup() -> Frames:
    """A conductor opening a proxy component: proxy/initialize instead of initialize."""
    frames = setup(1)
    frames[0] = (C, req(0, "proxy/initialize", frames[0][1]["params"]))
    return frames


def successor(sender: str, id_: int | None, method: str, params: Any) -> tuple[str, Any]:
    envelope = {"method": method, "params": params}
    if id_ is None:
        return (sender, note("proxy/successor", envelope))
    return (sender, req(id_, "proxy/successor", envelope))


def next_hop(prompt: dict[str, Any]) -> Frames:
    """The proxy (the agent here) opens its successor and prompts it through the conductor."""
    init = {
        "protocolVersion": 1,
        "clientCapabilities": {},
        "clientInfo": {"name": "p", "version": "1"},
    }
    result = {"protocolVersion": 1, "agentCapabilities": {}, "authMethods": []}
    chunk = {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "ok"}}
    return [
        successor(A, 100, "initialize", init),
        (C, ok(100, result)),
        successor(A, 101, "session/new", {"cwd": "/", "mcpServers": []}),
        (C, ok(101, {"sessionId": "inner"})),
        successor(A, 102, "session/prompt", prompt),
        successor(C, None, "session/update", {"sessionId": "inner", "update": chunk}),
        (C, ok(102, {"stopReason": "end_turn"})),
    ]


def findings(frames: Frames, end: bool = True, fast: bool = True) -> list[Violation]:
    validator = Validator()
    validator.shortcut.enabled = fast
    found: list[Violation] = []
    for seq, (side, message) in enumerate(frames, start=1):
        raw = message if isinstance(message, bytes) else orjson.dumps(message)
        found += validator.feed(side, parse_frame(raw), seq)
    if end:
        found += validator.end()
    if fast:
        # the short way for streamed chunks finds exactly what the long way finds
        assert findings(frames, end, fast=False) == found
    return found


T0 = "2026-11-30T00:00:00.000000Z"


def rules(frames: Frames, end: bool = True) -> list[str]:
    return [f.rule for f in findings(frames, end)]


def check(rule: str, bad: Frames, clean: Frames, end: bool = True) -> list[Violation]:
    """``bad`` breaks ``rule``; ``clean`` breaks nothing at all."""
    found = findings(bad, end)
    version = next(
        (
            m["params"]["protocolVersion"]
            for _, m in bad
            if isinstance(m, dict) and m.get("method") == "initialize"
        ),
        2,
    )
    assert rule in [f.rule for f in found], [f.as_dict() for f in found]
    hit = next(f for f in found if f.rule == rule)
    assert hit.level == RULES[rule].level
    # schema findings name the version whose schema they come from, and its tag
    tagged = f"ACP v{version} schema {schema_sources().tag(version)}"
    assert hit.spec in (RULES[rule].spec, RULES[rule].spec.replace("ACP schema", tagged))
    assert hit.message
    assert findings(clean, end) == []
    return found


CHUNK_TEXTS = st.text(alphabet=st.sampled_from('ab "\\\n😀'), max_size=6)


@st.composite
def chunk_frames(draw: st.DrawFn) -> bytes:
    """A streamed chunk's bytes: mostly the same shape, sometimes another message, variant
    or member, or a defect, and the text's place sometimes holding structure."""
    text = draw(CHUNK_TEXTS)
    message_id = draw(st.sampled_from([b'"m"', b'"m"', b'"m"', b'"n"', b"7"]))
    variant = draw(st.sampled_from([b"agent_message_chunk"] * 3 + [b"agent_thought_chunk"]))
    literal = orjson.dumps(text)
    literal = draw(
        st.sampled_from([literal] * 6 + [b'"x","type":"image"', b'"x","type":5', b'"x\\u0041"'])
    )
    extra = draw(st.sampled_from([b""] * 4 + [b',"annotations":{"priority":"high"}']))
    return (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"' + S.encode()
        + b'","update":{"sessionUpdate":"' + variant + b'","messageId":' + message_id
        + b',"content":{"type":"text","text":' + literal + extra + b"}}}}"
    )  # fmt: skip


#: A clean chunk of the usual shape.
CLEAN_CHUNK = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"' + S.encode()
    + b'","update":{"sessionUpdate":"agent_message_chunk","messageId":"m",'
    + b'"content":{"type":"text","text":"ab"}}}}'
)  # fmt: skip


def streamed_recording(path: Path, texts: list[str]) -> list[bytes]:
    """A recording of a session whose one prompt the agent answers with a text chunk per
    ``texts``, of one message (plain records, as `run` writes a stream); its agent frames:
    the answers to initialize and session/new, the chunks (seqs 6, 7, ...), the prompt's."""
    T = "2026-11-30T10:00:00.000000Z"
    init = b'{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":2}}'
    ready = b'{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":2}}'
    new = b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"cwd":"/","mcpServers":[]}}'
    created = b'{"jsonrpc":"2.0","id":1,"result":{"sessionId":"s"}}'
    prompt = (
        b'{"jsonrpc":"2.0","id":2,"method":"session/prompt","params":{"sessionId":"s","prompt":[]}}'
    )
    chunk = (
        b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text",'
        b'"text":%s}}}}'
    )
    answer = b'{"jsonrpc":"2.0","id":2,"result":{"stopReason":"end_turn"}}'
    agent = [ready, created, *(chunk % orjson.dumps(text) for text in texts), answer]
    recorded = [(C, init), (A, ready), (C, new), (A, created), (C, prompt)]
    recorded += [(A, raw) for raw in agent[2:]]
    lines = [start_record(T, ["a"], 1)]
    lines += [
        frame_record(i, T, side, parse_frame(raw)) for i, (side, raw) in enumerate(recorded, 1)
    ]
    path.write_bytes(b"".join(lines))
    return agent
