"""One table of what is secret (:mod:`acp_proxy.transcript.secrets`), read by every path:
a JSON field, a record's field, a command line's flag, ``NAME=value`` and header, a URL's
query, text (prose and what is not JSON: stderr), a key cut between chunks, and the live
stderr cutter. Each row of the table is recognised by each path that reads it; each place
where the old lists differed (a secret one path kept) has its test, and so do the names
that are no secret."""

from __future__ import annotations

import base64
import io
import re
from typing import Any

import orjson

from acp_proxy.core.framing import parse_frame
from acp_proxy.core.wire import WireModel
from acp_proxy.live import addons
from acp_proxy.live.addons import STDERR_PIECE, StderrLines
from acp_proxy.transcript.records import frame_record, start_record, stderr_record
from acp_proxy.transcript.redact import Redactor, redact_lines
from acp_proxy.transcript.secrets import (
    AUTH_SCHEMES,
    BEFORE_SECRET,
    HEADER_WORDS,
    KEY_SHAPES,
    NAME_WORDS,
    NEXT_WORD_FLAGS,
    RUN_TOGETHER,
    RUN_TOGETHER_ENDS,
    SHORT_PASSWORD_FLAGS,
    TEXT_HEADERS,
    secret_header,
    secret_name,
)

T = "2026-01-01T00:00:00.000000Z"
SECRET = "SECRETVALUE1"


def field(redactor: Redactor, name: str, value: Any = SECRET) -> bytes:
    """A request's parameter ``name`` as a redaction stores the frame."""
    raw = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "_x", "params": {name: value}})
    stored, _ = redactor.frame(WireModel().feed("client", parse_frame(raw), 1, T))
    return stored.raw


def names() -> list[str]:
    """A name for each word of the table: the word, and run together after another."""
    return [
        *sorted(NAME_WORDS),
        *(f"pg{word}" for word in RUN_TOGETHER),
        *(f"GITHUB{word.upper()}" for word in RUN_TOGETHER_ENDS),
    ]


def test_every_secret_word_is_found_by_every_path_that_reads_a_name() -> None:
    """A JSON field, a record's field, a flag (``--name X``, ``--name=X``), ``NAME=X`` in
    arguments and in text, ``"name": "X"`` in text, ``name: X`` in stderr, a URL's query, a
    header after ``-H`` (in arguments and in text): each word of the table hides its value."""
    redactor = Redactor()
    for name in names():
        assert secret_name(name) and secret_header(name), name
        assert SECRET.encode() not in field(redactor, name), name
        assert SECRET not in orjson.dumps(redactor.record({"kind": "x", name: SECRET})).decode()
        for argv in (["tool", f"--{name}", SECRET], ["tool", f"--{name}={SECRET}"],
                     ["env", f"{name}={SECRET}", "tool"], ["curl", "-H", f"{name}: {SECRET}"],
                     ["curl", f"--header={name}: {SECRET}"]):  # fmt: skip
            hidden, paths = redactor.argv(argv)
            assert SECRET not in " ".join(hidden) and paths, argv
        for text in (f"export {name}={SECRET}", f'{{"{name}": "{SECRET}"}}',
                     f"curl -H '{name}: {SECRET}' https://h"):  # fmt: skip
            assert SECRET not in redactor.string(text), text
            assert SECRET.encode() not in redactor.text(text.encode()), text
        assert SECRET.encode() not in redactor.text(f"{name}: {SECRET}".encode()), name
        assert SECRET not in redactor.url(f"https://h/p?{name}={SECRET}"), name


def test_header_words_make_a_header_secret_and_no_other_name() -> None:
    """``X-Auth``, ``X-Pwd``: secret as a header (after ``-H``, in arguments and in text);
    as a field they are the protocol's (``authMethods``) or the working directory (``PWD``)."""
    redactor = Redactor()
    for word in sorted(HEADER_WORDS):
        header = f"X-{word.capitalize()}"
        assert secret_header(header) and not secret_name(word), word
        hidden, _ = redactor.argv(["curl", "-H", f"{header}: {SECRET}"])
        assert SECRET not in " ".join(hidden), word
        assert SECRET not in redactor.string(f"curl -H '{header}: {SECRET}'"), word
    assert not secret_name("authMethods") and not secret_name("PWD")


def test_every_text_header_and_scheme_is_found_in_prose_and_in_stderr() -> None:
    """``Authorization: Basic X`` and the like, in a message and in the agent's stderr."""
    redactor = Redactor()
    for header in TEXT_HEADERS:
        for scheme in ("", *(f"{scheme.capitalize()} " for scheme in AUTH_SCHEMES)):
            text = f"sent {header.title()}: {scheme}{SECRET} ok"
            assert SECRET not in redactor.string(text), text
            assert SECRET.encode() not in redactor.text(text.encode()), text


def test_every_key_shape_is_found_by_every_path() -> None:
    """Each key shape's example: in a message, in stderr, as a field's value, as an object's
    key, base64-encoded, and cut between two chunks of a streamed message."""
    redactor = Redactor()
    for shape in KEY_SHAPES:
        key = shape.example
        assert key.startswith(shape.starts) or key.lower().startswith(shape.starts), key
        assert re.fullmatch(shape.pattern(), key), key
        assert not re.fullmatch(shape.pattern(), key[:-1]), key  # its example is the shortest
        secret = key.split()[-1]
        assert secret not in redactor.string(f"the key is {key} ok"), key
        assert secret.encode() not in redactor.text(f"loaded {key} ok".encode()), key
        assert secret.encode() not in field(redactor, "data", f"{key} ok"), key
        if len(key) >= 15:
            assert key.encode() not in field(redactor, "data", {key: 1}), key
        encoded = base64.b64encode(f"{key}\n".encode()).decode()
        assert encoded not in redactor.string(f"auth {encoded}"), key
        cut = len(shape.starts[0]) + 1
        copy = redacted_records(chunk_record(1, f"here: {key[:cut]}"), chunk_record(2, key[cut:]))
        assert secret[-6:].encode() not in copy, key


def test_the_stderr_cutter_never_cuts_after_what_a_secret_follows() -> None:
    """The cutter reads the table: after each of :data:`BEFORE_SECRET` and a space, a long
    stderr line is not cut (it is cut before), so what the secret is found by stays with it."""
    assert addons._BEFORE_SECRET is BEFORE_SECRET  # (not a list of its own)
    for before in BEFORE_SECRET:
        line = b"x" * (STDERR_PIECE - 40) + b" " + before.upper() + b" " + b"S" * 100
        head = StderrLines().feed(line)[0]
        assert head.endswith(b"x "), before
        assert max(len(word) for word in BEFORE_SECRET) <= 9  # (the cutter looks 9 back)
    assert set(BEFORE_SECRET) >= {scheme.encode() for scheme in AUTH_SCHEMES}
    assert set(BEFORE_SECRET) >= {flag.lower().encode() for flag in NEXT_WORD_FLAGS}
    for command, (flag, _, next_word) in SHORT_PASSWORD_FLAGS.items():
        if next_word:
            assert {command.encode(), flag.encode()} <= set(BEFORE_SECRET), command


# --- where the lists differed: each a secret one path kept ---------------------------------


def pieces_redacted(text: bytes) -> list[bytes]:
    """A stderr line longer than a piece, cut as the recorder cuts it, each piece redacted
    as ``run --redact`` and ``redact`` redact a stderr record."""
    redactor = Redactor()
    lines = StderrLines()
    pieces = lines.feed(text) + lines.feed(b"")
    assert b"".join(pieces) == text
    return [redactor.text(piece) for piece in pieces]


def test_a_long_stderr_line_is_not_cut_between_a_flag_or_cookie_and_its_secret() -> None:
    """The cutter knew ``:``, ``=`` and the schemes; the redaction also finds a secret after
    curl's ``-u`` and ``-H``, within a cookie (after ``;``) and after ``sshpass -p``: a
    piece cut there held the secret alone, kept."""
    for words in (b"curl -u admin:SECRETVALUE1", b"curl -H 'X-Auth: SECRETVALUE1",
                  b"curl --header X-Auth:\tSECRETVALUE1", b"Cookie: a=b; session=SECRETVALUE1",
                  b"sshpass -p SECRETVALUE1", b"redis-cli -a SECRETVALUE1"):  # fmt: skip
        line = b"x" * (STDERR_PIECE - 40) + b" " + words + b"z" * 100 + b" done"
        assert all(b"SECRETVALUE1" not in piece for piece in pieces_redacted(line)), words


def test_stderr_judges_a_name_as_a_field_is_judged() -> None:
    """``name: value`` in stderr (or a frame that is not JSON) had its own test of a name:
    it missed ``passphrase`` and ``bearer`` and hid what no field hides (``tokens: 345``,
    ``inputTokens``, ``monkey``). Now one test, :func:`secret_name`, for both."""
    redactor = Redactor()
    for name in ("passphrase", "bearer", "DB_PASS", "apiKeys"):
        text = f"config {name}: SECRETVALUE1".encode()
        assert b"SECRETVALUE1" not in redactor.text(text), name
        assert b"SECRETVALUE1" not in field(redactor, name), name
    for text in (b"INFO done in 12ms tokens: 345 model=claude", b"inputTokens: 1234",
                 b"monkey: banana", b"keyboard: us", b"tokenizer: cl100k"):  # fmt: skip
        assert redactor.text(text) == text, text


def test_pass_and_pw_make_any_name_secret_not_only_a_header() -> None:
    """``-H 'X-Pass: X'`` was hidden, ``DB_PASS=X`` and ``--pass X`` were not."""
    redactor = Redactor()
    for name in ("DB_PASS", "RABBITMQ_DEFAULT_PASS", "pass", "pw", "smtpPw"):
        assert secret_name(name), name
        assert b"SECRETVALUE1" not in field(redactor, name), name
        assert "SECRETVALUE1" not in redactor.string(f"{name}=SECRETVALUE1"), name
        hidden, _ = redactor.argv(["tool", f"--{name}", "SECRETVALUE1"])
        assert "SECRETVALUE1" not in hidden, name
        assert "SECRETVALUE1" not in redactor.url(f"https://h/?{name}=SECRETVALUE1"), name
    for name in ("passes", "bypass", "compass", "password_file", "pass_count", "PWD"):
        assert not secret_name(name), name


def test_a_name_whose_words_joined_hold_a_secret_word_is_secret() -> None:
    """``apikeys`` was secret and ``apiKeys`` (the same words) was not, as a field; stderr
    hid both."""
    redactor = Redactor()
    for name in ("apiKeys", "api_keys", "API-KEYS"):
        assert b"SECRETVALUE1" not in field(redactor, name, ["SECRETVALUE1"]), name
    for name in ("inputTokens", "hotKeys", "monkey_keys"):
        assert not secret_name(name), name


def chunk_record(seq: int, text: str) -> bytes:
    update = {"sessionUpdate": "agent_message_chunk", "messageId": "m1",
              "content": {"type": "text", "text": text}}  # fmt: skip
    value = {"jsonrpc": "2.0", "method": "session/update",
             "params": {"sessionId": "s1", "update": update}}  # fmt: skip
    return frame_record(seq, T, "agent", parse_frame(orjson.dumps(value)))


def redacted_records(*records: bytes) -> bytes:
    """A recording of ``records`` as ``redact`` copies it."""
    lines = [start_record(T, ["agent"], 1), *records]
    out = io.BytesIO()
    numbered = ((n, line.rstrip(b"\n")) for n, line in enumerate(lines, 1))
    redact_lines(numbered, out)
    return out.getvalue()


def test_a_bearer_token_in_any_case_is_joined_across_chunks() -> None:
    """A chunk that ends with ``BeArEr`` (any case, as the key shape reads it) waits for the
    next (the chunk join knew three spellings), and the token, all in the next chunk, is
    hidden there (it was let go: the key looked as if within one chunk, once its scheme was
    left out); so is a chunk that ends with a scheme and the token's start."""
    for scheme in ("Bearer", "BeArEr"):
        copy = redacted_records(
            chunk_record(1, f"use {scheme} "), chunk_record(2, "abc123def456 ok")
        )
        assert b"abc123def456" not in copy and b'"text":"[redacted:' in copy, scheme
    copy = redacted_records(chunk_record(1, "use Bearer a"), chunk_record(2, "bcdefgh1 ok"))
    assert b"bcdefgh1" not in copy  # (a scheme and a word: it waited for the last word only)
    copy = redacted_records(chunk_record(1, "kept "), stderr_record(T, b"hi"))
    assert b"redacted" not in copy
