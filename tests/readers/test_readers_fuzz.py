"""Readers never print a traceback, whatever a recording holds (hypothesis)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import orjson
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from acp_proxy.cli import cli
from acp_proxy.readers.follow import LineSplitter, follow_records
from acp_proxy.transcript.records import UnreadableLine, ViolationRecord, parse_record

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
