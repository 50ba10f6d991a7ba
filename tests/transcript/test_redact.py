"""Recordings that are safe to share: `acp-proxy redact` and `acp-proxy run --redact`,
through the real proxy."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson

from acp_proxy.core.framing import parse_frame
from acp_proxy.core.wire import WireModel
from acp_proxy.transcript.reading import read_records
from acp_proxy.transcript.records import FrameRecord
from acp_proxy.transcript.redact import Redactor
from acp_proxy.transcript.secrets import secret_name
from tests.conftest import PROXY, SCRIPTED_AGENT, clean_env, invoke

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
    proc = invoke("redact", str(transcript), "-o", str(out))
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
    validate = [invoke("validate", str(p)).stdout.split(b": ", 1)[-1] for p in (transcript, out)]
    assert validate[0].count(b"\n") == validate[1].count(b"\n")
    # what a reviewer checks before sharing: each changed record's place and paths
    said = proc.stdout.decode().splitlines()
    assert len(said) == 1 + len(changed), said
    number = 1 + after.index(orjson.dumps(session_new))
    assert (
        f"{out}:{number}: seq {session_new['seq']}: params.mcpServers[0].env[0].value, "
        "params.mcpServers[1].headers[0].value"
    ) in said, said


def test_redact_contents_also_hides_prompts_and_file_contents(tmp_path):
    """--contents replaces prompt text (and file, resource and terminal contents) with its
    size and a tag."""
    transcript, _, _ = record(tmp_path)
    out = tmp_path / "shared.jsonl"
    assert invoke("redact", "--contents", str(transcript), "-o", str(out)).returncode == 0
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


#: A secret in each place a user expects one gone, with what must stay beside it.
PLANTED = [b"tok-in-args", b"key-in-args", b"pw-in-url", b"tok-in-query", b"bearer-in-terminal",
           b"value-in-argv", b"header-in-argv", b"key-in-binary", b"key-in-text",
           b"sk-ant-api03-stderrsecretvalue1234"]  # fmt: skip


def test_redaction_reaches_every_place_a_secret_hides_and_a_second_pass_changes_nothing(
    tmp_path: Path,
):
    """MCP server args (--token X, --api-key=X), credentials in an MCP url (user:pw@,
    ?access_token=), terminal/create args (-H "Authorization: Bearer ..."), NAME=value and
    --header=Authorization: ... in the recorded argv, a secret-named field in a frame stored
    as base64 (not UTF-8) and in a frame that is not JSON, an API-key shaped string on the
    agent's stderr. A second pass over the copy changes nothing more."""
    from acp_proxy.transcript.records import end_record, frame_record, start_record, stderr_record

    t = "2026-01-01T00:00:00.000000Z"
    new = {"cwd": "/", "mcpServers": [
        {"name": "gh", "command": "gh-mcp", "args": ["--token", "tok-in-args", "--api-key=key-in-args", "--verbose"], "env": []},
        {"type": "http", "name": "docs", "url": "https://me:pw-in-url@docs.example/mcp?access_token=tok-in-query&lang=en", "headers": []},
    ]}  # fmt: skip
    terminal = {"sessionId": "s", "command": "curl",
                "args": ["-H", "Authorization: Bearer bearer-in-terminal", "https://api.example"]}  # fmt: skip
    frames = [
        ("client", orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": new})),
        ("agent", orjson.dumps({"jsonrpc": "2.0", "id": 7, "method": "terminal/create", "params": terminal})),
        ("agent", b'{"jsonrpc":"2.0","method":"_x","params":{"apiKey":"key-in-binary","n":"\xff"}}'),
        ("agent", b'debug: config loaded, api_key=key-in-text, model=opus'),
    ]  # fmt: skip
    argv = [
        "env",
        "OPENAI_API_KEY=value-in-argv",
        "agent",
        "--header=Authorization: header-in-argv",
    ]
    path = tmp_path / "secrets.jsonl"
    with open(path, "wb") as out:
        out.write(start_record(t, argv, 1))
        for seq, (side, raw) in enumerate(frames, 1):
            out.write(frame_record(seq, t, side, parse_frame(raw)))
        out.write(stderr_record(t, b"using key sk-ant-api03-stderrsecretvalue1234 for requests"))
        out.write(end_record(t, 0, "client closed stdin"))
    original = path.read_bytes()
    assert all(secret in original for secret in PLANTED if secret != b"key-in-binary")
    assert b"key-in-binary" not in original  # stored as base64: a plain search misses it
    once, twice = tmp_path / "once.jsonl", tmp_path / "twice.jsonl"
    for source, target in ((path, once), (once, twice)):
        assert invoke("redact", str(source), "-o", str(target)).returncode == 0
    copy = once.read_bytes()
    decoded = copy + b"".join(r.frame.raw for r in read_records(once) if isinstance(r, FrameRecord))
    for secret in PLANTED:
        assert secret not in decoded, secret
    # what is not secret stays: the flags, the host, the other arguments and fields
    for kept in (b"--verbose", b"docs.example/mcp", b"lang=en", b"https://api.example",
                 b"model=opus", b"--header=Authorization: ", b"OPENAI_API_KEY="):  # fmt: skip
        assert kept in decoded, kept
    assert twice.read_bytes() == copy  # nothing more to hide


T = "2026-01-01T00:00:00.000000Z"


def write_recording(path: Path, frames: list[tuple[Any, ...]], tail: bytes = b"") -> None:
    """A recording of these frames, each (side, raw) or (side, raw, findings), then
    ``tail`` (more lines, as they are)."""
    from acp_proxy.transcript.records import end_record, frame_record, start_record

    with open(path, "wb") as out:
        out.write(start_record(T, ["agent"], 1))
        for seq, (side, raw, *found) in enumerate(frames, 1):
            out.write(frame_record(seq, T, side, parse_frame(raw), *found[:1]))
        out.write(end_record(T, 0, "client closed stdin"))
        out.write(tail)


def redacted(path: Path, *options: str) -> bytes:
    """`acp-proxy redact` of ``path``: the copy, with its frames' own bytes (base64 and text
    frames decoded) added, so a search finds what they hold."""
    out = path.with_name(path.stem + "-shared.jsonl")
    assert invoke("redact", *options, str(path), "-o", str(out)).returncode == 0
    copy = out.read_bytes()
    return copy + b"".join(r.frame.raw for r in read_records(out) if isinstance(r, FrameRecord))


def update(body: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "method": "session/update",
                         "params": {"sessionId": "s", "update": body}})  # fmt: skip


#: A key of each shape, and where each is planted (a tool call's command, a message's text).
KEYS = [b"sk-ant-api03-Zq8mN2vX7pL4kR9t", b"sk-proj-Hf83jdK29dkLq0wz", b"ghp_" + b"a1B2" * 9,
        b"github_pat_11ABCDEFG0123456789_abcdefXYZ", b"xoxb-1234567890-abcdefghij",
        b"AKIAIOSFODNN7EXAMPLE", b"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N"]  # fmt: skip


def test_key_shapes_and_run_together_names_are_hidden_in_every_json_string(tmp_path: Path):
    """API-key shapes inside any string (a tool call's command, an agent's message, a bearer
    token in a curl command), and run-together secret names (PGPASSWORD=, GITHUBTOKEN,
    --privatekey) in fields, arguments and commands; the rest of each string stays."""
    k = [key.decode() for key in KEYS]
    command = (f"export ANTHROPIC_API_KEY={k[0]} OPENAI_API_KEY={k[1]}; curl -H 'Authorization: "
               f"Bearer {k[2]}' https://api.example && git push https://x:{k[3]}@github.com; "
               f"aws --key {k[4]}; echo {k[5]}")  # fmt: skip
    frames = [
        ("agent", update({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Run curl",
                          "rawInput": {"command": command}})),
        ("agent", update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text",
                          "text": f"the session token is {k[6]}"}})),
        ("agent", orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "terminal/create", "params": {
            "sessionId": "s", "command": "psql",
            "args": ["PGPASSWORD=hunter2pg", "--privatekey", "pk-run-together", "-c", "PGPASSWORD=hunter3pg psql"],
            "_meta": {"GITHUBTOKEN": "gh-run-together", "PRIVATEKEY": "pem-run-together",
                      "inputTokens": 1234, "monkey": "banana"}}})),
    ]  # fmt: skip
    path = tmp_path / "keys.jsonl"
    write_recording(path, frames)
    original = path.read_bytes()
    copy = redacted(path)
    planted = [*KEYS, b"hunter2pg", b"hunter3pg", b"pk-run-together", b"gh-run-together",
               b"pem-run-together"]  # fmt: skip
    for secret in planted:
        assert secret in original and secret not in copy, secret
    for kept in (b"curl -H 'Authorization: Bearer [redacted:", b"https://api.example && git push",
                 b"export ANTHROPIC_API_KEY=[redacted:", b"the session token is [redacted:", b'"inputTokens":1234',
                 b'"monkey":"banana"', b"PGPASSWORD=[redacted:", b'"--privatekey","[redacted:'):  # fmt: skip
        assert kept in copy, kept
    for name in ("PGPASSWORD", "GITHUBTOKEN", "PRIVATEKEY", "githubToken", "OPENAIKEY"):
        assert secret_name(name), name
    for name in ("inputTokens", "maxTokens", "monkey", "keyboard", "tokens", "hotkeys"):
        assert not secret_name(name), name


def test_findings_quoting_a_secret_are_redacted_and_an_unreadable_line_is_never_copied(
    tmp_path: Path,
):
    """The proxy's own not-json finding quotes the line (`ANTHROPIC_API_KEY=sk-ant-...`); a
    stored finding may quote a value hidden by its place (an authenticate parameter), cut
    short; a violation record may hold a key; a truncated last line (a crash) holds an
    authenticate frame. None of them reaches the copy; the lines stay as many."""
    leak = b"ANTHROPIC_API_KEY=sk-ant-api03-NotJsonLeak123456789 started"
    pin = "pin-98765432-very-secret-value-that-is-long"
    auth = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "authenticate",
                         "params": {"methodId": "k", "pin": pin}})  # fmt: skip
    quoted = {"rule": "schema", "level": "error", "spec": "schema",
              "message": f"params.pin: {orjson.dumps(pin).decode()[:40]}... is not a number"}  # fmt: skip
    found = {"rule": "not-json", "level": "error", "spec": "ACP transport",
             "message": "the agent sent a line that is not JSON: " + orjson.dumps(leak.decode()).decode()[:60]}  # fmt: skip
    violation = orjson.dumps({"kind": "violation", "t": T, "seq": 2, "rule": "x", "level": "error",
                              "message": "answered with ghp_" + "Q" * 36, "spec": ""})  # fmt: skip
    truncated = (b'{"kind":"frame","seq":9,"t":"%s","from":"client","msg":{"jsonrpc":"2.0","id":2,'
                 b'"method":"authenticate","params":{"methodId":"k","pin":"crash-pin-4444' % T.encode())  # fmt: skip
    path = tmp_path / "findings.jsonl"
    write_recording(path, [("client", auth, [quoted]), ("agent", leak, [found])],
                    violation + b"\n" + truncated)  # fmt: skip
    original = path.read_bytes()
    copy = redacted(path)
    for secret in (b"NotJsonLeak", b"pin-98765432", b"Q" * 36, b"crash-pin-4444"):
        assert secret in original and secret not in copy, secret
    assert copy.count(b"\n") >= original.count(b"\n") + 1  # (the last line, ended now)
    assert b"is not a number" in copy and b"the agent sent a line that is not JSON" in copy
    assert b'"redacted":["(findings)","params.pin"]' in copy
    # live, as `run --redact` records the proxy's own finding
    transcript, capture = tmp_path / "live.jsonl", tmp_path / "capture"
    subprocess.run([*PROXY, "run", "--redact", "--record", str(transcript), "--",
                    *SCRIPTED_AGENT, "echo", str(capture)], input=leak + b"\n", check=True,
                   capture_output=True, env=clean_env(), timeout=60)  # fmt: skip
    live = transcript.read_bytes()
    assert b'"rule":"not-json"' in live and b"NotJsonLeak" not in live


def test_contents_hides_what_agents_read_with_their_own_tools(tmp_path: Path):
    """--contents: a tool call's content (text, diffs), rawInput, rawOutput and _meta (where
    agents put the tool's response) become sizes and tags; without it they stay."""
    frames = [
        ("agent", update({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "Read x.py",
                          "kind": "read", "rawInput": {"file_path": "/src/RAW-INPUT-PATH"}})),
        ("agent", update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed",
                          "content": [{"type": "content", "content": {"type": "text", "text": "FILE-BODY-TEXT"}},
                                      {"type": "diff", "path": "/src/x.py", "oldText": "OLD-BODY", "newText": "NEW-BODY"}],
                          "rawOutput": {"output": "RAW-OUTPUT-BODY"},
                          "_meta": {"claudeCode": {"toolResponse": {"content": "META-BODY"}}}})),
    ]  # fmt: skip
    path = tmp_path / "tools.jsonl"
    write_recording(path, frames)
    hidden = (b"RAW-INPUT-PATH", b"FILE-BODY-TEXT", b"OLD-BODY", b"NEW-BODY", b"RAW-OUTPUT-BODY",
              b"META-BODY")  # fmt: skip
    plain, contents = redacted(path), redacted(path, "--contents")
    for secret in hidden:
        assert secret in plain and secret not in contents, secret
    assert b"Read x.py" in contents and b'"path":"/src/x.py"' in contents and b"bytes:" in contents


def test_a_second_pass_leaves_every_tag_alone(tmp_path: Path):
    """`redact` of its own output changes nothing, with and without --contents: the tags of
    authenticate's parameters, of contents, of keys inside strings."""
    frames = [
        ("client", orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "authenticate",
                                 "params": {"methodId": "k", "apiKey": "sk-ant-xyz", "pin": 1234}})),
        ("client", orjson.dumps({"jsonrpc": "2.0", "id": 2, "method": "session/prompt", "params": {
            "sessionId": "s", "prompt": [{"type": "text", "text": "use " + KEYS[0].decode()}]}})),
        ("agent", update({"sessionUpdate": "tool_call", "toolCallId": "c1", "title": "t",
                          "rawInput": {"command": "curl -H 'Authorization: Basic dXNlcjpwdw=='"}})),
    ]  # fmt: skip
    path = tmp_path / "twice.jsonl"
    write_recording(path, frames)
    for options in ((), ("--contents",)):
        once = tmp_path / "once.jsonl"
        again = tmp_path / "again.jsonl"
        for source, target in ((path, once), (once, again)):
            assert invoke("redact", *options, str(source), "-o", str(target)).returncode == 0
        assert again.read_bytes() == once.read_bytes(), options
        assert b"sk-ant-xyz" not in once.read_bytes() and b"dXNlcjpwdw" not in once.read_bytes()


def test_a_frame_the_redaction_cannot_read_is_kept_as_its_size_never_its_bytes(monkeypatch):
    """Redaction never raises: a frame it fails on (here, its splicer breaks) is stored as a
    line saying its size, never as it crossed the wire; the next frame is redacted as before."""
    from acp_proxy.transcript import redact

    secret = "sk-ant-api03-" + "Q" * 40
    raw = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "x/y", "params": {"apiKey": secret}})
    model, redactor = WireModel(), Redactor()
    message = model.feed("client", parse_frame(raw), 1, "t")

    def broken(raw: bytes) -> Any:
        raise RecursionError("nested past what the splicer follows")

    monkeypatch.setattr(redact, "value_spans", broken)
    stored, hidden = redactor.frame(message)
    assert hidden == ["(frame)"] and secret.encode() not in stored.raw
    assert b"%d bytes" % len(raw) in stored.raw
    monkeypatch.undo()
    again, hidden = redactor.frame(model.feed("client", parse_frame(raw), 2, "t"))
    assert hidden == ["params.apiKey"], hidden
    assert secret.encode() not in again.raw and b'"method":"x/y"' in again.raw


def test_redact_lists_the_first_changed_records_then_says_how_to_see_the_rest(tmp_path):
    from acp_proxy.readers.commands.redact import LISTED, _what_changed

    copy = tmp_path / "copy.jsonl"
    rows = [{"kind": "frame", "seq": n, "redacted": [f"params.k{n}"]} for n in range(LISTED + 5)]
    copy.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    said = _what_changed(str(copy), len(rows))
    assert said[0] == f"{copy}:1: seq 0: params.k0" and len(said) == LISTED + 1
    assert said[-1] == f"(and more: grep -n '\"redacted\"' {copy} lists them all)"
    assert _what_changed(str(copy), 0) == []
