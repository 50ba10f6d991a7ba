"""What the redaction found only in part: a key streamed across chunks, base64
credentials, short password flags, the echoes of a hidden prompt; and what it hid that is no
secret. Each case through ``redact`` (a file) and ``run --redact`` (run's chain, live) alike,
and a second pass that changes nothing."""

from __future__ import annotations

import base64
import io
import tempfile
from pathlib import Path
from typing import Any

import orjson
from structlog.testing import capture_logs

from acp_proxy.core.framing import Framer, parse_frame
from acp_proxy.core.protocol import Side
from acp_proxy.core.validator import Validator
from acp_proxy.live.addons import run_addons
from acp_proxy.live.observer import Observer
from acp_proxy.live.recorder import Recorder
from acp_proxy.log import get_logger
from acp_proxy.transcript.reading import read_records
from acp_proxy.transcript.records import (
    FrameRecord,
    end_record,
    frame_record,
    start_record,
)
from acp_proxy.transcript.redact import Redactor, redact_stream
from acp_proxy.transcript.secrets import secret_name
from tests.conftest import SCRIPTED_AGENT, invoke

T = "2026-01-01T00:00:00.000000Z"
KEY = "sk-ant-api03-Zq7xK2mP9vL4tR8wQ1nB6dF"

Frames = list[tuple[str, dict[str, Any]]]


def chunk(text: str, message: str = "m1", variant: str = "agent_message_chunk") -> dict[str, Any]:
    update = {"sessionUpdate": variant, "messageId": message,
              "content": {"type": "text", "text": text}}  # fmt: skip
    return {"jsonrpc": "2.0", "method": "session/update",
            "params": {"sessionId": "s1", "update": update}}  # fmt: skip


def request(id_: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "method": method, "params": params}


def response(id_: int, result: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": id_, "result": result}


def offline(tmp_path: Path, frames: Frames, *options: str) -> bytes:
    """``acp-proxy redact`` of a recording of ``frames``: the copy (which a second pass
    leaves as it is)."""
    source = tmp_path / "session.jsonl"
    with source.open("wb") as out:
        out.write(start_record(T, ["agent"], 1))
        for seq, (side, value) in enumerate(frames, 1):
            out.write(frame_record(seq, T, side, parse_frame(orjson.dumps(value))))
        out.write(end_record(T, 0, "client closed stdin"))
    copy = tmp_path / "shared.jsonl"
    done = invoke("redact", *options, str(source), "-o", str(copy))
    assert done.returncode == 0, done.stderr
    assert_second_pass_changes_nothing(copy.read_bytes(), "--contents" in options)
    return copy.read_bytes()


def live(tmp_path: Path, frames: Frames, contents: bool = False) -> bytes:
    """``run --redact``'s chain fed ``frames``, a read each, as they cross: the recording
    (which a second pass leaves as it is)."""
    path = tmp_path / "live.jsonl"
    log = get_logger()
    recorder = Recorder(path, log, ["agent"], 1)
    validator = Validator()
    addons = run_addons(recorder, log, validator, redactor=Redactor(contents))
    observer = Observer(recorder, log, validator, addons=addons)
    with capture_logs():
        for side, value in frames:
            lines = Framer().lines(orjson.dumps(value) + b"\n")
            observer.observe(Side.CLIENT if side == "client" else Side.AGENT, lines)
        observer.finish(0, "done")
    data = path.read_bytes()
    assert_second_pass_changes_nothing(data, contents)
    return data


def assert_second_pass_changes_nothing(data: bytes, contents: bool) -> None:
    out = io.BytesIO()
    redact_stream(io.BytesIO(data), out, contents)
    assert out.getvalue() == data


def both(tmp_path: Path, frames: Frames, contents: bool = False) -> list[bytes]:
    """The copy ``redact`` makes and the recording ``run --redact`` makes, of ``frames``."""
    options = ("--contents",) if contents else ()
    here = Path(tempfile.mkdtemp(dir=tmp_path))
    return [offline(here, frames, *options), live(here, frames, contents)]


def texts(copy: bytes) -> list[str]:
    """The chunk texts of a copy, in order."""
    out = []
    for line in copy.splitlines():
        record = orjson.loads(line)
        update = record.get("msg", {}).get("params", {}).get("update", {})
        if str(update.get("sessionUpdate", "")).endswith("_chunk"):
            out.append(update["content"]["text"])
    return out


def test_a_key_streamed_across_two_or_three_chunks_is_hidden_in_each(tmp_path: Path) -> None:
    """A key cut between chunks of a message ("your key is sk-ant-api03-" then the rest):
    the chunks' text joined holds it, so the chunk it starts in gets its tag and the others
    lose their part; no piece of it is left, the words around it stay."""
    cuts = [
        ["your key is sk-ant-api03-", "Zq7xK2mP9vL4tR8wQ1nB6dF ok"],
        ["your key is sk-ant-api03-", "Zq7xK2mP9vL4", "tR8wQ1nB6dF ok"],
        ["your key is s", "k-ant-api03-Zq7xK2mP9vL4tR8wQ1nB6dF", " ok"],
    ]
    for pieces in cuts:
        frames: Frames = [("agent", chunk(piece)) for piece in pieces]
        for copy in both(tmp_path, frames):
            said = "".join(texts(copy))
            for part in ("sk-ant-api03", "Zq7xK2mP9vL4", "tR8wQ1nB6dF", "k-ant"):
                assert part not in said, (pieces, said)
            assert said.startswith("your key is [redacted:") and said.endswith(" ok"), said
            assert len(texts(copy)) == len(pieces)  # every chunk recorded, none dropped


def test_a_held_chunk_keeps_the_order_of_what_crossed_meanwhile(tmp_path: Path) -> None:
    """While a chunk waits for the rest of a key, what crosses meanwhile (another message's
    chunks, the client's frames) waits behind it: records stay in the order of the wire, and
    each message's key is found in its own chunks."""
    frames: Frames = [
        ("agent", chunk("first: sk-ant-api03-", "m1")),
        ("agent", chunk("unrelated words", "m2")),
        ("client", {"jsonrpc": "2.0", "method": "_ping", "params": {}}),
        ("agent", chunk("Zq7xK2mP9vL4tR8wQ1nB6dF ok", "m1")),
        ("agent", response(9, {})),
    ]
    for copy in both(tmp_path, frames):
        seqs = [orjson.loads(line).get("seq") for line in copy.splitlines()]
        assert [s for s in seqs if s is not None] == [1, 2, 3, 4, 5]
        assert b"Zq7xK2mP9vL4" not in copy and b"sk-ant-api03" not in copy
        assert b"unrelated words" in copy


def test_a_chunk_that_only_looks_like_a_key_start_is_kept_whole(tmp_path: Path) -> None:
    """A chunk ending in what could start a key, followed by no key, is recorded as it was."""
    frames: Frames = [("agent", chunk("ask gh")), ("agent", chunk(" about it"))]
    for copy in both(tmp_path, frames):
        assert texts(copy) == ["ask gh", " about it"]


def test_base64_credentials_are_hidden(tmp_path: Path) -> None:
    """A docker config's ``auth`` and an ``.npmrc``'s ``_auth=`` are base64 of
    ``user:secret``: decoded, found, hidden; base64 that holds none (an image) stays."""
    docker = base64.b64encode(b"me:ghp_" + b"Q" * 36).decode()
    npm = base64.b64encode(b"deploy:hunter2hunter2").decode()
    config = orjson.dumps({"auths": {"https://index.docker.io/v1/": {"auth": docker}}}).decode()
    plain = base64.b64encode(bytes(range(256)) * 4).decode()
    frames: Frames = [
        ("client", request(1, "fs/read_text_file", {"sessionId": "s1", "path": "/c.json"})),
        ("agent", response(1, {"content": config})),
        ("agent", chunk(f"your .npmrc has _auth={npm} set")),
        ("agent", {"jsonrpc": "2.0", "method": "_x", "params": {"auth": docker, "png": plain}}),
    ]
    for copy in both(tmp_path, frames):
        assert docker.encode() not in copy and npm.encode() not in copy
        assert b'\\"auth\\":\\"[redacted:' in copy and b"_auth=[redacted:" in copy
        assert plain.encode() in copy


def test_short_password_flags_are_hidden_in_arguments_and_in_text(tmp_path: Path) -> None:
    """``mysql -pSECRET`` and ``sshpass -p SECRET``, ``redis-cli -a SECRET``: in a terminal's
    ``args`` (its ``command`` beside them) and in any text; ``mysql -p DB`` (which asks
    for the password) keeps DB."""
    frames: Frames = [
        ("agent", request(1, "terminal/create", {"sessionId": "s1", "command": "mysql",
                                                "args": ["-uroot", "-pPWone111", "shop"]})),
        ("agent", request(2, "terminal/create", {"sessionId": "s1", "command": "/usr/bin/sshpass",
                                                "args": ["-p", "PWtwo222", "ssh", "host"]})),
        ("agent", request(3, "terminal/create", {"sessionId": "s1", "command": "mysql",
                                                "args": ["-p", "shopdb"]})),
        ("agent", chunk("run: mysql -uroot -pPWthree3 shop; sshpass -p PWfour44 ssh h; "
                        "redis-cli -a PWfive55 ping")),
    ]  # fmt: skip
    for copy in both(tmp_path, frames):
        for secret in (b"PWone111", b"PWtwo222", b"PWthree3", b"PWfour44", b"PWfive55"):
            assert secret not in copy, secret
        assert b'"-p[redacted:' in copy and b"mysql -uroot -p[redacted:" in copy
        assert b'"args":["-p","shopdb"]' in copy


def test_contents_hides_the_prompt_where_the_agent_echoes_it(tmp_path: Path) -> None:
    """With ``--contents``, the prompt's words are hidden where agents repeat them: the
    ``session_info_update`` title made of the prompt, and the titles ``session/list``
    answers with; without it, they stay."""
    prompt = "plan the secret merger with Initech"
    frames: Frames = [
        ("client", request(1, "session/prompt", {"sessionId": "s1",
                                                 "prompt": [{"type": "text", "text": prompt}]})),
        ("agent", {"jsonrpc": "2.0", "method": "session/update", "params": {
            "sessionId": "s1", "update": {"sessionUpdate": "session_info_update",
                                          "title": prompt}}}),
        ("client", request(2, "session/list", {})),
        ("agent", response(2, {"sessions": [{"sessionId": "s1", "cwd": "/w", "title": prompt}]})),
    ]  # fmt: skip
    for copy in both(tmp_path, frames, contents=True):
        assert b"Initech" not in copy
    for copy in both(tmp_path, frames):
        assert copy.count(b"Initech") == 3


def test_counters_and_hints_are_not_taken_for_secrets(tmp_path: Path) -> None:
    """A counter named after tokens (``token_count``), a ``key=value`` hint of a config
    command, a ``$VAR`` standing for a secret: no secret, recorded as they were."""
    frames: Frames = [
        ("agent", {"jsonrpc": "2.0", "method": "_usage",
                   "params": {"token_count": 1234, "keyName": "primary", "tokenType": "Bearer"}}),
        ("agent", request(1, "terminal/create", {"sessionId": "s1", "command": "tool",
                                                "args": ["config", "set", "key=value",
                                                         "--token=$GITHUB_TOKEN"]})),
        ("agent", chunk("usage: tool config set key=value (token_count: 12)")),
    ]  # fmt: skip
    for copy in both(tmp_path, frames):
        assert b"redacted" not in copy, copy
    for name in ("token_count", "tokenCount", "keyName", "api_key_file"):
        assert not secret_name(name), name
    for name in ("token", "api_key", "GITHUB_TOKEN", "password"):
        assert secret_name(name), name


def test_run_redact_and_show_conversation_of_the_copy_never_print_a_streamed_key(
    run_proxy: Any, tmp_path: Path
) -> None:
    """End to end: an agent streams a key in three chunks through ``run --redact``; the
    recording, and ``show --conversation`` of it, hold no piece of it."""
    source = tmp_path / "chunks"
    pieces = ["your key is sk-ant-api03-", "Zq7xK2mP9vL4", "tR8wQ1nB6dF ok"]
    source.write_bytes(b"".join(orjson.dumps(chunk(p)) + b"\n" for p in pieces))
    result = run_proxy([*SCRIPTED_AGENT, "emit", str(source)], options=("--redact",))
    assert result.returncode == 0, result.stderr
    assert result.stdout == source.read_bytes()  # the wire untouched
    data = result.transcript.read_bytes()
    assert b"Zq7xK2mP9vL4" not in data and b"tR8wQ1nB6dF" not in data
    shown = invoke("show", "--conversation", "--color", "never", str(result.transcript))
    assert shown.returncode == 0, shown.stderr
    assert b"your key is [redacted:" in shown.stdout and b"Zq7x" not in shown.stdout
    frames = [r for r in read_records(result.transcript) if isinstance(r, FrameRecord)]
    assert len(frames) == 3
