"""Recordings that are safe to share: `acp-proxy redact` and `acp-proxy run --redact`,
through the real proxy."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson
from conftest import PROXY, SCRIPTED_AGENT, clean_env

from acp_proxy.framing import parse_frame
from acp_proxy.redact import Redactor, secret_name
from acp_proxy.transcript import FrameRecord, read_records
from acp_proxy.wire import WireModel

SECRETS = [b"ghp_s3cr3t", b"Bearer abc.def", b"sk-proxy-123", b"sk-ant-xyz", b"tok123", b"1234"]


def session_with_secrets() -> list[dict[str, Any]]:
    """A client's side of a session that carries MCP secrets, auth parameters and keys."""
    new = {
        "cwd": "/work",
        "mcpServers": [
            {
                "name": "github",
                "command": "/usr/bin/gh-mcp",
                "args": [],
                "env": [{"name": "GITHUB_TOKEN", "value": "ghp_s3cr3t"}],
            },
            {
                "type": "http",
                "name": "docs",
                "url": "https://docs.example",
                "headers": [{"name": "Authorization", "value": "Bearer abc.def"}],
            },
        ],
    }
    return [
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": 1,
                "clientCapabilities": {},
                "_meta": {"proxyApiKey": "sk-proxy-123"},
            },
        },
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "authenticate",
            "params": {"methodId": "key", "apiKey": "sk-ant-xyz", "pin": "1234"},
        },
        {"jsonrpc": "2.0", "id": 2, "method": "session/new", "params": new},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "session/prompt",
            "params": {"sessionId": "s1", "prompt": [{"type": "text", "text": "my prompt"}]},
        },
    ]


def record(tmp_path: Path, *options: str) -> tuple[Path, bytes, bytes]:
    """Run the messages through `acp-proxy run` (an echo agent); return the transcript, what
    the agent got and what the client got."""
    data = b"".join(orjson.dumps(m) + b"\n" for m in session_with_secrets())
    transcript, capture = tmp_path / "t.jsonl", tmp_path / "capture"
    proc = subprocess.run(
        [*PROXY, "run", "--record", str(transcript), *options, "--",
         *SCRIPTED_AGENT, "echo", str(capture), "--token=tok123"],
        input=data, capture_output=True, env=clean_env(), timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return transcript, capture.read_bytes(), proc.stdout


def test_redact_removes_secrets_and_keeps_the_rest_byte_for_byte(tmp_path):
    """MCP env and headers values, auth parameters, secret-looking fields and flags are gone;
    every other record is byte for byte; changed frames list what was redacted; the copy
    still validates like the original."""
    transcript, _, _ = record(tmp_path)
    original = transcript.read_bytes()
    assert all(secret in original for secret in SECRETS)
    out = tmp_path / "shared.jsonl"
    proc = subprocess.run(
        [*PROXY, "redact", str(transcript), "-o", str(out)], capture_output=True, env=clean_env()
    )
    assert proc.returncode == 0 and str(out).encode() in proc.stdout
    copy = out.read_bytes()
    assert not any(secret in copy for secret in SECRETS)
    assert b"my prompt" in copy  # contents stay without --contents
    before, after = original.split(b"\n"), copy.split(b"\n")
    assert len(before) == len(after)
    changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
    assert changed and all(b'"redacted":[' in b for _, b in changed)
    # within a changed frame, only the secret values' bytes changed
    for old, new in changed:
        if b'"kind":"frame"' in old:
            old_msg, new_msg = orjson.loads(old)["msg"], orjson.loads(new)["msg"]
            paths = orjson.loads(new)["redacted"]
            assert paths and old_msg != new_msg
    records = [orjson.loads(line) for line in after if line]
    assert [r.get("seq") for r in records] == [
        r.get("seq") for r in map(orjson.loads, filter(None, before))
    ]
    session_new = next(r for r in records if r.get("msg", {}).get("method") == "session/new")
    assert session_new["redacted"] == [
        "params.mcpServers[0].env[0].value",
        "params.mcpServers[1].headers[0].value",
    ]
    env_value = session_new["msg"]["params"]["mcpServers"][0]["env"][0]["value"]
    assert env_value.startswith("[redacted:") and env_value.endswith("]")
    validate = [
        subprocess.run([*PROXY, "validate", str(p)], capture_output=True).stdout.split(b": ", 1)[-1]
        for p in (transcript, out)
    ]
    assert validate[0].count(b"\n") == validate[1].count(b"\n")


def test_redact_contents_also_hides_prompts_and_file_contents(tmp_path):
    """--contents replaces prompt text (and file, resource and terminal contents) with its
    size and a tag."""
    transcript, _, _ = record(tmp_path)
    out = tmp_path / "shared.jsonl"
    subprocess.run([*PROXY, "redact", "--contents", str(transcript), "-o", str(out)], check=True)
    copy = out.read_bytes()
    assert b"my prompt" not in copy and b"[redacted:9 bytes:" in copy


def test_run_redact_records_redacted_and_leaves_the_wire_alone(tmp_path):
    """`run --redact`: the transcript has no secret; the agent and the client got every byte."""
    transcript, agent_got, client_got = record(tmp_path, "--redact")
    sent = b"".join(orjson.dumps(m) + b"\n" for m in session_with_secrets())
    assert agent_got == sent and client_got == sent
    copy = transcript.read_bytes()
    assert not any(secret in copy for secret in SECRETS)
    frames = [r for r in read_records(transcript) if isinstance(r, FrameRecord)]
    assert len(frames) == 8


def test_the_same_value_gets_the_same_tag_and_names_are_judged_by_words():
    """Flows line up (one value, one tag, per file); field names are split into words."""
    redactor = Redactor(key=b"k")
    assert redactor.tag("x") == redactor.tag("x") != redactor.tag("y")
    assert Redactor(key=b"other").tag("x") != redactor.tag("x")
    for name in ("apiKey", "api_key", "AUTH_TOKEN", "password", "Authorization", "x-api-key"):
        assert secret_name(name), name
    for name in ("sessionId", "toolCallId", "monkey", "tokens", "keyboard", "messageId"):
        assert not secret_name(name), name
    wire = WireModel()
    frame = parse_frame(b'{"jsonrpc":"2.0","id":1,"method":"_x","params":{"a" : 1,"token":"t"}}')
    redacted, paths = redactor.frame(wire.feed("client", frame, 1))
    assert paths == ["params.token"]
    assert (
        redacted.raw
        == b'{"jsonrpc":"2.0","id":1,"method":"_x","params":{"a" : 1,"token":"%s"}}'
        % (redactor.tag("t").encode())
    )
