"""Holes an audit found in the redaction: secrets that came out of `acp-proxy redact` (and
`run --redact`) as they went in. Each test fails without its fix."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from acp_proxy.core.framing import oversized_frame, parse_frame
from acp_proxy.core.wire import WireModel
from acp_proxy.live.addons import STDERR_PIECE, StderrLines
from acp_proxy.transcript.reading import read_records
from acp_proxy.transcript.records import frame_record, start_record
from acp_proxy.transcript.redact import Redactor
from tests.conftest import invoke

T = "2026-01-01T00:00:00.000000Z"


def frame(redactor: Redactor, raw: bytes, side: str = "agent") -> tuple[bytes, list[str]]:
    """A frame's bytes as a redactor stores them, and the paths it lists."""
    stored, paths = redactor.frame(WireModel().feed(side, parse_frame(raw), 1, T))
    return stored.raw, paths


def update(body: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "method": "session/update",
                         "params": {"sessionId": "s", "update": body}})  # fmt: skip


def test_a_frame_cut_short_keeps_no_unclosed_secret_value() -> None:
    """(a) A frame that ends mid-value (unterminated, or the start of an oversized line) is no
    JSON: a secret-named member's value is hidden up to its end."""
    redactor = Redactor()
    cut = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"apiKey":"SECRET_PARTIAL_APIKEY_1234'
    stored, paths = redactor.bare_frame(parse_frame(cut, terminated=False))
    assert b"SECRET_PARTIAL" not in stored.raw and paths == ["(text)"]
    assert stored.raw.startswith(
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"apiKey":"[redacted:'
    )
    for name in (b"PGPASSWORD", b"auth_token", b"cookie", b"Authorization", b"client_secret"):
        text = b'{"env":{"%s" : "SECRET_PARTIAL_9876' % name
        assert b"SECRET_PARTIAL" not in redactor.text(text), name
    escaped = b'{"password":"ab\\"SECRET_AFTER_QUOTE'
    assert b"SECRET_AFTER_QUOTE" not in redactor.text(escaped)
    big = oversized_frame(b'{"params":{"token":"SECRET_OVERSIZED_START', 1 << 30)
    stored, _ = redactor.bare_frame(big)
    assert b"SECRET_OVERSIZED" not in stored.raw and stored.oversized == 1 << 30


def test_key_shapes_right_after_an_escape_or_a_letter_are_hidden() -> None:
    """(b) Distinctive prefixes need no word boundary; a bare ``sk-`` counts escapes as one."""
    redactor = Redactor()
    for text in (b'{"msg":"loaded\\nsk-ant-api03-RUNSTDERRESCAPED1"}',
                 b"echo x%3Dsk-ant-api03-WORDSTARTabcdef", b"xghp_" + b"A" * 36,
                 b"xglpat-abcdefghijklmnopqrstu", b"xAKIAIOSFODNN7EXAMPLE",
                 b"tab\\tsk-abcdefghijklmnop", b'q\\"sk-abcdefghijklmnop', b"u%20sk-abcdefghijklmnop",
                 b"k=sk-abcdefghijklmnop"):  # fmt: skip
        hidden = redactor.text(text)
        assert b"[redacted:" in hidden, text
    assert redactor.text(b"disk-abcdefghijklmnop") == b"disk-abcdefghijklmnop"
    hidden, _ = frame(redactor, update({"sessionUpdate": "tool_call", "toolCallId": "c",
                                       "title": "echo x%3Dsk-ant-api03-WORDSTARTabcdef"}))  # fmt: skip
    assert b"WORDSTART" not in hidden


def test_every_occurrence_of_a_duplicate_key_is_hidden() -> None:
    """(c) JSON parsers keep the last of duplicate keys; the others are hidden too."""
    redactor = Redactor()
    for raw, secret in (
        (b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"password":"SECRET_DUP_1","password":"x"}}',
         b"SECRET_DUP_1"),
        (b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"x":"ghp_SECRETDUP2abcdefghijklmnop","x":"y"}}',
         b"SECRETDUP2"),
        (b'{"jsonrpc":"2.0","id":1,"method":"session/new","params":{"env":{"A":"SECRET_ENV_DUP3"},'
         b'"env":{"B":"y"}}}', b"SECRET_ENV_DUP3"),
        (b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"a":{"k":"z","k":"ghp_SECRETDUP4abcdefghijklmn"},'
         b'"a":{"k":1}}}', b"SECRETDUP4"),
    ):  # fmt: skip
        stored, paths = frame(redactor, raw, "client")
        assert secret not in stored and paths, raw
        orjson.loads(stored)
    protocol = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"type":"text","type":"image"}}'
    assert frame(redactor, protocol, "client") == (protocol, [])  # the protocol's: kept
    hidden = (
        b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"env":{"type":"SECRETENV5","type":"a"}}}'
    )
    assert b"SECRETENV5" not in frame(redactor, hidden, "client")[0]
    unique = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"text":"a \\"k\\": b","k":"y"}}'
    assert frame(redactor, unique, "client") == (unique, [])


def test_only_a_whole_tag_is_left_alone() -> None:
    """(d) A string that merely starts like a tag is redacted as any other."""
    redactor = Redactor()
    key = "sk-ant-api03-" + "B" * 30
    stored, _ = frame(redactor, update({"sessionUpdate": "agent_message_chunk",
                                        "content": {"type": "text", "text": f"[redacted:zz] here is {key}"}}))  # fmt: skip
    assert key.encode() not in stored
    raw = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"password":"[redacted:x]SECRET_DONEPREF2"}}'
    stored, _ = frame(redactor, raw, "client")
    assert b"SECRET_DONEPREF2" not in stored
    assert b"SECRET_DONEPREF3" not in redactor.text(b"password=[redacted:x]SECRET_DONEPREF3")
    tag = redactor.tag("v")
    again = b'{"jsonrpc":"2.0","id":1,"method":"x","params":{"password":"%s"}}' % tag.encode()
    assert frame(redactor, again, "client") == (again, [])


def test_a_key_shaped_object_key_is_replaced_by_a_tag() -> None:
    """(e) Object keys: a key-shaped one is a tag, in the frame and in the paths listed."""
    redactor = Redactor()
    ghp = "ghp_abcdefghijklmnopqrstuvwxyz0123"
    stored, paths = frame(redactor, update({"sessionUpdate": "tool_call_update", "toolCallId": "c",
                                            "rawOutput": {ghp: "v"}}))  # fmt: skip
    assert ghp.encode() not in stored and orjson.loads(stored)["params"]["update"]["rawOutput"]
    assert paths and all(ghp not in p for p in paths)
    ant = "sk-ant-api03-KEYKEYabcdefghijklmnop"
    raw = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "x", "params": {"_meta": {ant: 1}}})
    stored, paths = frame(redactor, raw, "client")
    assert ant.encode() not in stored and not any(ant in p for p in paths), paths
    record = frame_record(1, T, "client", parse_frame(stored), [], redacted=paths)
    assert ant.encode() not in record
    assert frame(redactor, stored, "client") == (stored, [])  # a second pass


def test_a_secret_across_a_stderr_piece_boundary_is_cut_whole() -> None:
    """(f) A long stderr line is cut at whitespace near the piece's end, not inside a word."""
    lines = StderrLines()
    line = b"x" * 65516 + b" GITHUB_TOKEN=SECRET_SPLIT_ACROSS_PIECES"
    pieces = lines.feed(line) + lines.feed(b"")
    assert b"".join(pieces) == line and all(len(p) <= STDERR_PIECE for p in pieces)
    redactor = Redactor()
    assert all(b"_SPLIT_ACROSS" not in redactor.text(piece) for piece in pieces)
    for before in (b"Authorization: Bearer", b"password:", b"--token"):  # not cut after these
        line = b"x" * 65400 + b" " + before + b" " + b"y" * 200 + b" SECRETAFTERNAME"
        head = StderrLines().feed(line)[0]
        assert not head.endswith(before + b" "), before
    solid = StderrLines().feed(b"y" * (STDERR_PIECE + 10))  # no whitespace: cut at the size
    assert [len(p) for p in solid] == [STDERR_PIECE]


def test_contents_hides_what_a_permission_request_carries() -> None:
    """(g) --contents: a permission request's tool call, as a tool_call update's."""
    request = orjson.dumps({"jsonrpc": "2.0", "id": 5, "method": "session/request_permission",
        "params": {"sessionId": "s", "options": [], "toolCall": {
            "toolCallId": "c", "rawInput": {"command": "cat CONTENT_RAWIN"},
            "rawOutput": "CONTENT_RAWOUT",
            "content": [{"type": "diff", "path": "/a", "oldText": "CONTENT_OLD", "newText": "CONTENT_NEW"},
                        {"type": "content", "content": {"type": "text", "text": "CONTENT_TEXT"}}]}}})  # fmt: skip
    stored, paths = frame(Redactor(contents=True), request)
    for secret in (
        b"CONTENT_RAWIN",
        b"CONTENT_RAWOUT",
        b"CONTENT_OLD",
        b"CONTENT_NEW",
        b"CONTENT_TEXT",
    ):
        assert secret not in stored, secret
    assert "params.toolCall.rawInput" in paths
    assert frame(Redactor(), request)[1] == []


def test_redact_twice_through_the_cli_changes_nothing_and_leaks_nothing(tmp_path: Path) -> None:
    """(h) and all: `acp-proxy redact` of a recording with each hole; its copy holds none of
    the secrets, and a second pass (an unreadable line's placeholder too) changes nothing."""
    frames = [
        parse_frame(b'{"password":"SECRET_DUP_1","password":"x"}'),
        parse_frame(
            b'{"jsonrpc":"2.0","method":"x","params":{"apiKey":"SECRET_PARTIAL_APIKEY_1234',
            terminated=False,
        ),
        parse_frame(b'{"msg":"loaded\\nsk-ant-api03-RUNSTDERRESCAPED1"}'),
        parse_frame(
            b'{"jsonrpc":"2.0","id":3,"method":"x","params":{"_meta":{"sk-ant-api03-KEYKEYabcdefgh":1}}}'
        ),
    ]
    path, once, again = tmp_path / "r.jsonl", tmp_path / "once.jsonl", tmp_path / "again.jsonl"
    with open(path, "wb") as out:
        out.write(start_record(T, ["agent"], 1))
        for seq, item in enumerate(frames, 1):
            out.write(frame_record(seq, T, "agent", item, []))
        out.write(b'{"kind":"frame","seq":9,"t":"x","msg":{"apiKey":"SECRET_TRUNCATED_LINE_1"')
    for source, target in ((path, once), (once, again)):
        result = invoke("redact", str(source), "-o", str(target))
        assert result.returncode == 0, result.stderr
    copy = once.read_bytes() + b"".join(
        r.frame.raw for r in read_records(once) if hasattr(r, "frame")
    )
    for secret in (
        b"SECRET_DUP_1",
        b"SECRET_PARTIAL",
        b"RUNSTDERRESCAPED1",
        b"KEYKEY",
        b"SECRET_TRUNC",
    ):
        assert secret not in copy, secret
    assert b"is no record]" in once.read_bytes()
    assert again.read_bytes() == once.read_bytes()
