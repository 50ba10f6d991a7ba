"""Readers never print a traceback, whatever a recording holds (hypothesis, and a fuzzer that
swaps the types of the values of the shipped recordings)."""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_proxy.cli import cli
from acp_proxy.readers.follow import LineSplitter, follow_records
from acp_proxy.transcript.records import UnreadableLine, ViolationRecord, parse_record
from tests.conftest import PROXY, RECORDINGS, clean_env, invoke

_scalar = (
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
_json = st.recursive(
    _scalar,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_field = st.sampled_from(
    ["kind", "seq", "t", "from", "msg", "text", "base64", "violations", "argv", "pid", "rule",
     "level", "message", "spec", "exit", "reason", "format", "version"]
)  # fmt: skip
_record = st.fixed_dictionaries(
    {"kind": st.sampled_from(["start", "frame", "violation", "end", "other"]) | _scalar},
    optional={name: _json for name in ("seq", "t", "from", "msg", "text", "base64", "violations",
              "argv", "pid", "rule", "level", "message", "spec", "exit", "reason")},
)  # fmt: skip
_line = st.one_of(
    _record.map(orjson.dumps),
    st.dictionaries(_field, _json, max_size=6).map(orjson.dumps),
    st.binary(max_size=40).filter(lambda b: b"\n" not in b),
)
_file = st.lists(_line, max_size=8).map(lambda lines: b"\n".join(lines) + b"\n")

_START = b'{"kind":"start","t":"2026-01-01T00:00:00.000000Z","argv":["a"],"pid":1}'


def _run(args: list[str]) -> None:
    result = CliRunner().invoke(cli, args)
    assert result.exit_code in (0, 1, 2), result.output
    if result.exception is not None:
        assert isinstance(result.exception, SystemExit), repr(result.exception)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_file, headed=st.booleans())
def test_validate_show_stats_never_raise(body, headed):
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "r.jsonl"
        path.write_bytes((_START + b"\n" if headed else b"") + body)
        for args in (
            ["validate", str(path)],
            ["validate", "--format", "json", str(path)],
            ["show", "--no-color", str(path)],
            ["show", "--conversation", "--no-color", str(path)],
            ["show", "--conversation", "--json", str(path)],
            ["stats", str(path)],
            ["stats", "--format", "json", str(path)],
        ):
            _run(args)


@settings(max_examples=60, deadline=None)
@given(body=_file)
def test_follow_reads_every_line_of_whatever_is_there(body):
    fd, name = tempfile.mkstemp(suffix=".jsonl")
    os.write(fd, body)
    os.close(fd)

    class Done(Exception):
        pass

    def stop(_: float) -> None:
        raise Done

    try:
        got = []
        try:
            for record in follow_records(Path(name), lambda _: None, sleep=stop):
                got.append(record)
        except Done:
            pass
        lines = [line for line in body.split(b"\n")[:-1]]
        expected = [parse_record(n, line) for n, line in enumerate(lines, 1) if line.strip()]
        assert got == [r for r in expected if r is not None]
    finally:
        os.unlink(name)


@given(st.lists(st.binary(max_size=20), max_size=10))
def test_line_splitter_is_split(chunks):
    splitter = LineSplitter()
    out = [line for chunk in chunks for line in splitter.feed(chunk)]
    assert out == b"".join(chunks).split(b"\n")[:-1]


@given(st.lists(st.binary(max_size=20), max_size=10), st.integers(0, 12))
def test_line_splitter_cuts_a_line_past_its_limit(chunks, limit):
    """Past ``limit`` a line is its beginning: what is held never grows past it."""
    splitter = LineSplitter(limit)
    out = []
    for chunk in chunks:
        out += splitter.feed(chunk)
        assert len(splitter.pending) <= limit
    assert out == [line[:limit] for line in b"".join(chunks).split(b"\n")[:-1]]


def test_a_violation_record_with_a_string_seq_is_reported_not_a_traceback(tmp_path):
    """The bug: a string seq reached a field typed int | None and broke every reader."""
    bad = b'{"kind":"violation","t":"x","seq":"7","rule":"r","level":"error","message":"m","spec":"s"}'
    assert parse_record(3, bad) == UnreadableLine(
        3, 'malformed "violation" record (seq is "7", not an integer)'
    )
    good = parse_record(3, bad.replace(b'"7"', b"7"))
    assert isinstance(good, ViolationRecord) and good.seq == 7
    path = tmp_path / "r.jsonl"
    path.write_bytes(_START + b"\n" + bad + b"\n")
    result = CliRunner().invoke(cli, ["validate", str(path)])
    assert result.exit_code == 0 and "line 2 is not a transcript record" in result.output
    for command in (["show", "--no-color"], ["stats"]):
        result = CliRunner().invoke(cli, [*command, str(path)])
        assert result.exit_code == 0, result.output
        assert result.exception is None or isinstance(result.exception, SystemExit)


# --- hostile shapes: depth and types are the recording's choice ------------------------------

_V1 = RECORDINGS / "v1.jsonl"


def _with_tool_call(path: Path, field: bytes) -> Path:
    """v1.jsonl with its tool_call update's ``rawInput`` made ``field`` (raw JSON text)."""
    lines = _V1.read_bytes().split(b"\n")[:-1]
    out = []
    for line in lines:
        record = orjson.loads(line)
        if b'"sessionUpdate":"tool_call"' in line and record["kind"] == "frame":
            record["msg"]["params"]["update"]["rawInput"] = "@@"
            out.append(orjson.dumps(record).replace(b'"@@"', field))
        else:
            out.append(line)
    path.write_bytes(b"\n".join(out) + b"\n")
    return path


def _reads(path: Path, *extra: list[str], out: Path) -> None:
    for args in (
        ["show", "--no-color", str(path)],
        ["show", "--conversation", "--no-color", str(path)],
        ["show", "--conversation", "--json", str(path)],
        ["report", "-o", str(out / "r.html"), str(path)],
        ["diff", "--no-color", str(_V1), str(path)],
        ["diff", "--format", "json", str(path), str(path)],
        *extra,
    ):
        _run(args)


@pytest.mark.parametrize("depth", [300, 990])
def test_a_frame_nested_deep_is_read_by_every_reader(tmp_path, depth):
    """The bugs: 300 levels broke report, show --conversation --json and redact (orjson
    writes 254 at most); 990 broke show, diff and replay (Python recursion)."""
    deep = b'{"token":' * depth + b'"sk-secret"' + b"}" * depth
    path = _with_tool_call(tmp_path / "deep.jsonl", deep)
    copy = tmp_path / "copy.jsonl"
    _reads(path, ["redact", "-o", str(copy), str(path)], out=tmp_path)
    assert b"sk-secret" not in copy.read_bytes()
    result = CliRunner().invoke(cli, ["show", "--conversation", "--json", str(path)])
    assert "[nested deeper than 200 levels]" in result.output
    client = b"".join(
        orjson.dumps(r["msg"]) + b"\n"
        for r in map(orjson.loads, path.read_bytes().split(b"\n")[:-1])
        if r.get("from") == "client"
    )
    # (replay plays the agent on real descriptors, the relay's: a pipe, not CliRunner's)
    played = invoke("replay", "--speed", "0", "--no-record", str(path), input=client)
    assert played.returncode == 0, played.stderr


def test_a_session_update_or_params_of_another_type_is_read_by_every_reader(tmp_path):
    """The bugs: ``"sessionUpdate": ["tool_call"]`` broke show --conversation and report
    (unhashable); a session/prompt with a list as params broke diff."""
    out = []
    for line in _V1.read_bytes().split(b"\n")[:-1]:
        record = orjson.loads(line)
        message = record.get("msg")
        if isinstance(message, dict) and message.get("method") == "session/prompt":
            message["params"] = [message["params"]]
        elif b'"sessionUpdate":"tool_call"' in line:
            message["params"]["update"]["sessionUpdate"] = ["tool_call"]
        out.append(orjson.dumps(record))
    path = tmp_path / "types.jsonl"
    path.write_bytes(b"\n".join(out) + b"\n")
    _reads(path, out=tmp_path)
    result = CliRunner().invoke(cli, ["show", "--conversation", "--no-color", str(path)])
    assert '["tool_call"]' in result.output


# --- a type-swapping fuzzer over the real recordings -----------------------------------------


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    yield path, value
    children = (
        value.items()
        if isinstance(value, dict)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for key, item in children:
        yield from _nodes(item, (*path, key))


#: What stands for a deeply nested value until the record is written (orjson writes 254 levels).
_DEEP = "\x00deep"


def _other_type(value: Any, rng: random.Random) -> Any:
    """``value`` as another type: wrapped, a scalar, empty, hostile text, or deeply nested."""
    return rng.choice([[value], {"x": value}, "text", 7, -1.5, None, True, [], {},
                       "\n\x1b[31m\ufffe", _DEEP])  # fmt: skip


def _nested(rng: random.Random) -> bytes:
    depth = rng.choice([260, 990])
    if rng.random() < 0.5:
        return b"[" * depth + b"]" * depth
    return b'{"a":' * depth + b"1" + b"}" * depth


def _swapped(text: bytes, rng: random.Random) -> bytes:
    """A recording with the values at a few random places of its records swapped for values
    of other types (the records' own fields included)."""
    out = []
    for line in text.split(b"\n")[:-1]:
        record = orjson.loads(line)
        if rng.random() < 0.3:
            path, value = rng.choice(list(_nodes(record)))
            if not path:
                record = _other_type(value, rng)
            else:
                holder = record
                for key in path[:-1]:
                    holder = holder[key]
                holder[path[-1]] = _other_type(value, rng)
        out.append(orjson.dumps(record).replace(orjson.dumps(_DEEP), _nested(rng)))
    return b"\n".join(out) + b"\n"


@pytest.mark.parametrize("recording", sorted(RECORDINGS.glob("*.jsonl")), ids=lambda p: p.stem)
def test_no_reader_traces_back_on_a_real_recording_with_its_types_swapped(tmp_path, recording):
    """Every reader command reads every shipped recording with values of other types swapped
    in (lists, strings, objects, numbers, null, 990 levels of nesting) and never traces back."""
    rng = random.Random(recording.name)
    for _ in range(4):
        path = tmp_path / "swapped.jsonl"
        path.write_bytes(_swapped(recording.read_bytes(), rng))
        copy = tmp_path / "copy.jsonl"
        copy.unlink(missing_ok=True)
        client = b"".join(
            orjson.dumps(r["msg"]) + b"\n"
            for r in map(orjson.loads, recording.read_bytes().split(b"\n")[:-1])
            if r.get("from") == "client"
        )
        for args in (
            ["validate", str(path)],
            ["validate", "--format", "junit", str(path)],
            ["validate", "--format", "sarif", str(path)],
            ["show", "--no-color", str(path)],
            ["show", "--conversation", "--no-color", str(path)],
            ["show", "--conversation", "--json", str(path)],
            ["stats", str(path)],
            ["stats", "--format", "json", str(path)],
            ["report", "-o", str(tmp_path / "r.html"), str(path)],
            ["redact", "-o", str(copy), str(path)],
            ["diff", "--no-color", str(recording), str(path)],
            ["diff", "--format", "json", str(path), str(recording)],
            ["search", "e", str(path)],
            ["search", "--json", "e", str(path)],
            ["ls", str(tmp_path)],
            ["ls", "--json", str(tmp_path)],
        ):
            _run(args)
        played = invoke("replay", "--speed", "0", "--no-record", str(path), input=client)
        assert b"Traceback" not in played.stderr, played.stderr
        assert _followed(path)  # follow reads every line, whatever it holds
    # As the client, against an agent that answers nothing: the swapped frames are sent.
    agent = [sys.executable, "-c", "import sys; sys.stdin.buffer.read()"]
    replay = ["replay", "--as", "client", "--timeout", "0.2", str(path), "--", *agent]
    played = subprocess.run([*PROXY, *replay], capture_output=True, timeout=60, env=clean_env())
    assert b"Traceback" not in played.stderr, played.stderr[-2000:]
    # (a start record swapped away leaves no recording: said in one line, exit 2)
    assert played.returncode in (0, 1) or (
        played.returncode == 2 and b"not an acp-proxy recording" in played.stderr
    ), played.stderr[-2000:]


def _followed(path: Path) -> list[Any]:
    """What ``follow`` reads of ``path`` until it would wait for more."""

    class Done(Exception):
        pass

    def stop(_: float) -> None:
        raise Done

    got: list[Any] = []
    with contextlib.suppress(Done):
        got.extend(follow_records(path, lambda _: None, sleep=stop))
    return got
