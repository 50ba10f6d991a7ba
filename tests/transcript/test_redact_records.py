"""A second audit of the redaction: records whose own keys hide a secret (a key twice, a key
their kind does not have), and secret shapes it missed. Each test fails without its fix."""

from __future__ import annotations

import base64
import io

import orjson

from acp_proxy.transcript.records import (
    FrameRecord,
    StartRecord,
    UnreadableLine,
    parse_record,
    start_record,
)
from acp_proxy.transcript.redact import Redactor, redact_stream

T = "2026-01-01T00:00:00.000000Z"
ANT = "sk-ant-api03-AAAAbbbbCCCCddddEEEEffff0123456789"
START = start_record(T, ["agent"], 1).rstrip(b"\n").decode()


def chunk(text: str) -> str:
    return orjson.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s", "update": {"sessionUpdate": "agent_message_chunk",
                                     "content": {"type": "text", "text": text}}}}).decode()  # fmt: skip


def redacted(*lines: str) -> bytes:
    """The redacted copy of a recording made of these lines."""
    out = io.BytesIO()
    redact_stream(io.BytesIO(("\n".join(lines) + "\n").encode()), out)
    return out.getvalue()


def twice(*lines: str) -> bytes:
    """The copy, checked to be a fixed point: a second pass changes nothing."""
    once = redacted(*lines)
    again = io.BytesIO()
    redact_stream(io.BytesIO(once), again)
    assert again.getvalue() == once
    return once


HEAD = f'"kind":"frame","seq":5,"t":"{T}","from":"agent"'
STDERR = f'"kind":"stderr","t":"{T}"'
B64 = base64.b64encode(ANT.encode()).decode()


def test_a_record_with_a_key_twice_or_one_its_kind_has_not_keeps_no_secret() -> None:
    """Readers show the last of a duplicate key: an earlier one, or a key a record's kind
    does not read, is no longer copied as it was (it is left out, and the record says so)."""
    cases = [
        f'{{{STDERR},"text":"{ANT}","text":"harmless"}}',
        f'{{{STDERR},"text":"{ANT}","base64":"aGk="}}',  # (a reader reads the base64)
        f'{{{HEAD},"msg":{chunk("k " + ANT)},"msg":{chunk("hi")}}}',
        f'{{{HEAD},"msg":{chunk("hi")},"msg":{chunk("k " + ANT)}}}',
        f'{{{HEAD},"text":"{ANT}","msg":{chunk("hi")}}}',
        f'{{{HEAD},"base64":"{B64}","msg":{chunk("hi")}}}',
        f'{{{HEAD},"msg":{chunk("hi")},"text":"{ANT}"}}',
        f'{{{HEAD},"text":"hi","base64":"{B64}"}}',
        f'{{{HEAD},"unterminated":"{ANT}","msg":{chunk("hi")}}}',
        f'{{{HEAD},"redacted":["{ANT}"],"msg":{chunk("hi")}}}',
        f'{{{HEAD},"redacted":[{{"x":"{ANT}"}}],"msg":{chunk("hi")}}}',
        f'{{{HEAD},"redacted":"{ANT}","msg":{chunk("hi")}}}',
        f'{{{HEAD},"violations":[{{"rule":"r","message":"{ANT}","message":"m"}}],'
        f'"msg":{chunk("hi")}}}',
        f'{{"kind":"frame","seq":5,"t":"{ANT}","from":"agent","msg":{chunk("hi")}}}',
        f'{{"kind":"start","t":"{T}","format":"acp-proxy/1","version":"0","argv":["a",'
        f'"--password","{ANT}"],"argv":["agent"],"pid":1}}',
        f'{{"kind":"end","t":"{T}","exit":0,"reason":"x","reason":"{ANT}"}}',
        f'{{"kind":"end","t":"{T}","exit":0,"reason":"{ANT}","reason":"x"}}',
        f'{{"kind":"note","t":"{T}","a":{{"b":"{ANT}","b":"x"}}}}',
        f'{{{STDERR},"text":"{ANT}","text":"harmless","text":"x"}}',
        f'{{"kind":"stderr","t":"{ANT}","text":"hi"}}',
    ]
    for line in cases:
        copy = twice(START, line)
        text = copy.decode()
        assert ANT not in text and B64[:20] not in text, line
        records = [parse_record(n, row) for n, row in enumerate(copy.splitlines(), 1)]
        record = records[1]
        assert not isinstance(record, UnreadableLine), text
        assert isinstance(records[0], StartRecord), text
        if isinstance(record, FrameRecord):
            assert ANT.encode() not in record.frame.raw
            assert orjson.loads(copy.splitlines()[1]).get("redacted"), text


def test_the_message_a_reader_reads_is_the_one_kept_and_redacted() -> None:
    """A frame record with ``msg`` twice keeps the last (what a reader reads), its bytes
    as they were; ``text`` beside a ``msg`` is left out."""
    copy = twice(START, f'{{{HEAD},"msg":{chunk("k " + ANT)},"msg":{chunk("last one")}}}')
    record = parse_record(2, copy.splitlines()[1])
    assert isinstance(record, FrameRecord)
    assert record.frame.raw == chunk("last one").encode()
    copy = twice(START, f'{{{HEAD},"text":"{ANT}","msg":{chunk("kept")}}}')
    line = copy.splitlines()[1]
    assert b'"text":"' not in line.split(b'"msg":')[0] and chunk("kept").encode() in line


def test_records_with_nothing_to_hide_are_copied_byte_for_byte() -> None:
    """What the rules above look at leaves ordinary records alone: with findings, cut
    short, oversized, stderr with colons, a protocol's own duplicate key."""
    lines = [
        START,
        f'{{{HEAD},"violations":[{{"rule":"r","level":"error","message":"a: b","spec":"s"}}],'
        f'"msg":{chunk("hi: there")}}}',
        f'{{{HEAD},"unterminated":true,"msg":{chunk("x")}}}',
        f'{{{HEAD},"oversized":99999,"text":"{{\\"jsonrpc\\":\\"2.0\\""}}',
        f'{{{STDERR},"text":"warn: \\"a\\": b"}}',
        f'{{{HEAD},"msg":{{"jsonrpc":"2.0","method":"x","params":{{"type":"text","type":"image"}}}}}}',
        f'{{"kind":"end","t":"{T}","exit":0,"reason":"client closed stdin"}}',
    ]
    assert redacted(*lines).decode() == "\n".join(lines) + "\n"


PEM = (
    "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAAB\n"
    "-----END OPENSSH PRIVATE KEY-----\n"
)


def test_passwords_in_urls_credentials_headers_and_keys_in_any_string_are_hidden() -> None:
    """In any string (a message, a tool call's command, stderr, a command line's argument): a
    URL's password, ``curl -u user:pass``, a secret-named header after ``-H``, a ``bearer``
    token in any case, a private key block."""
    redactor = Redactor()
    for text, secret in (
        ("DATABASE_URL=postgres://admin:hunter2pw@db.internal:5432/prod", "hunter2pw"),
        ("connect to postgresql://u:s3cr3t%21@h/db now", "s3cr3t"),
        ("run: curl -u admin:hunter2 https://x", "hunter2"),
        ("curl --user=admin:hunter2 https://x", "hunter2"),
        ("curl -H 'X-Auth: dXNlcjpodW50ZXIy' https://x", "dXNlcjpodW50ZXIy"),
        ("curl -H 'anthropic-api-key: abcdefghijklmnop123'", "abcdefghijklmnop123"),
        ('curl --header "X-Session-Token: tok_0123456789" https://x', "tok_0123456789"),
        ("use bearer abcdefghijklmnop", "abcdefghijklmnop"),
        ("authorization: BEARER abc.def.0123", "abc.def.0123"),
        ("here it is " + PEM + " done", "b3BlbnNzaC1rZXktdjEA"),
        ("cut: -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA", "MIIEowIBAAKCAQEA"),
    ):
        hidden = redactor.string(text)
        assert secret not in hidden and "[redacted:" in hidden, text
        assert redactor.string(hidden) == hidden, text  # a second pass
        assert secret.encode() not in redactor.text(text.encode()), text
    for text in (  # as they are
        "see https://example.com:8080/a@b and http://user@host/",
        "docker run -u 1000:1000 img",
        "git push -u origin main",
        "the bearer of bad news; a bearer instrument",
        "Author: Bob",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkq\n-----END PUBLIC KEY-----",
    ):
        assert redactor.string(text) == text, text
    for argv, secret in (
        (["npx", "server-postgres", "postgresql://u:hunter2hunter2@h/db"], "hunter2hunter2"),
        (["curl", "-u", "admin:hunter2", "https://x"], "hunter2"),
        (["curl", "-uadmin:hunter2", "https://x"], "hunter2"),
        (["curl", "-H", "X-Auth: dXNlcjpodW50ZXIy"], "dXNlcjpodW50ZXIy"),
        (["curl", "--header", "anthropic-api-key: abcdefghijklmnop123"], "abcdefghijklmnop"),
    ):
        words, paths = redactor.argv(argv)
        assert secret not in " ".join(words) and paths, argv
        assert redactor.argv(words) == (words, []), argv
    assert redactor.argv(["curl", "-H", "Author: Bob", "-u", "admin"]) == (
        ["curl", "-H", "Author: Bob", "-u", "admin"], [])  # fmt: skip


def test_the_audits_recordings_leak_none_of_these_secrets() -> None:
    """Through the copy: an MCP server's args, the agent's argv, a file read, a message."""
    server = {"name": "x", "command": "npx", "env": [],
              "args": ["server-postgres", "postgresql://u:hunter2hunter2@h/db"]}  # fmt: skip
    new = {"jsonrpc": "2.0", "id": 1, "method": "session/new",
           "params": {"cwd": "/", "mcpServers": [server]}}  # fmt: skip
    read = {"jsonrpc": "2.0", "id": 9, "result": {"content": PEM}}
    start = start_record(T, ["agent", "--db", "postgres://u:hunter2hunter2@h/db"], 1)
    copy = twice(
        start.rstrip(b"\n").decode(),
        f'{{{HEAD},"msg":{orjson.dumps(new).decode()}}}',
        f'{{{HEAD},"msg":{orjson.dumps(read).decode()}}}',
        f'{{{HEAD},"msg":{chunk("run: curl -u admin:hunter2hunter2 https://x")}}}',
    )
    assert b"hunter2hunter2" not in copy and b"b3BlbnNzaC1rZXktdjEA" not in copy
