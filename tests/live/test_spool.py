"""A line too long to hold, spooled as it crosses (acp_proxy.live.spool): the recording
relay's memory stays flat however long the line; the line is relayed byte for byte and
recorded whole, in one record every reader reads."""

from __future__ import annotations

import base64
import binascii
import hashlib
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from structlog.testing import capture_logs

from acp_proxy.core.framing import Framer, LineEnd, LinePiece
from acp_proxy.live.spool import PREVIEW, SpooledFrame, Spooler
from acp_proxy.log import get_logger
from acp_proxy.transcript.records import FrameRecord, base64_record_ends, parse_record
from tests.conftest import clean_env, invoke

#: A 1 MiB block of every byte but ``\n`` (not UTF-8, not JSON): what the agent repeats.
_BLOCK = bytes(b for b in range(256) if b != 0x0A) * 4200
_BLOCK = _BLOCK[: 1 << 20]

#: Runs ``acp-proxy ARGS`` in this process, and writes its peak memory (VmHWM, KiB) to
#: argv[1] at exit (the peak of a reaped child would count the fork of the test first).
_PEAK = """
import atexit, sys
peak_file = sys.argv[1]
def report():
    with open("/proc/self/status") as status, open(peak_file, "w") as out:
        out.write(next(line for line in status if line.startswith("VmHWM:")).split()[1])
atexit.register(report)
sys.argv = ["acp-proxy", *sys.argv[2:]]
from acp_proxy.cli import main
main()
"""

#: The agent: SIZE bytes of blocks, no newline, then it exits.
_AGENT = """
import os, sys
block = bytes(b for b in range(256) if b != 10) * 4200
block = block[: 1 << 20]
size = int(sys.argv[1])
for _ in range(size >> 20):
    view = memoryview(block)
    while view:
        view = view[os.write(1, view):]
os.write(1, block[: size % (1 << 20)])
"""


def _expected(size: int) -> str:
    digest = hashlib.sha256()
    for _ in range(size >> 20):
        digest.update(_BLOCK)
    digest.update(_BLOCK[: size % (1 << 20)])
    return digest.hexdigest()


def _recorded_line(path: Path) -> tuple[dict[str, object], int, str]:
    """The frame record of the long line, read back a block at a time: its head (the keys
    before ``base64``), the size of its bytes and their digest."""
    digest, size = hashlib.sha256(), 0
    with path.open("rb") as stream:
        stream.readline()  # the start record
        head = b""
        while b',"base64":"' not in head:
            head += stream.read(4096)
        at = head.index(b',"base64":"')
        rest, head = head[at + 11 :], head[:at]
        carry, after = b"", b""
        while True:
            block = carry + rest
            end = block.find(b'"')
            if end >= 0:
                digest.update(binascii.a2b_base64(block[:end]))
                size += len(binascii.a2b_base64(block[:end]))
                assert block[end:].startswith(b'"}\n')
                after = block[end + 3 :] + stream.read()
                break
            cut = len(block) - len(block) % 4
            decoded = binascii.a2b_base64(block[:cut])
            digest.update(decoded)
            size += len(decoded)
            carry, rest = block[cut:], stream.read(4 << 20)
            assert rest, "the record ends without its closing quote"
    assert orjson.loads(after.split(b"\n")[0])["kind"] == "end"
    return orjson.loads(head + b"}"), size, digest.hexdigest()


def _run_long_line(tmp_path: Path, size: int, **env: str) -> tuple[int, Path]:
    """``run`` (recording) of an agent that writes one ``size``-byte line without its end:
    the proxy's peak memory (bytes) and the recording; what reached the client is checked
    here, byte for byte, by its digest (never held)."""
    peak_file, record = tmp_path / "peak", tmp_path / "long.jsonl"
    command = [sys.executable, "-c", _PEAK, str(peak_file), "run", "--log-level", "error",
               "--record", str(record), "--", sys.executable, "-c", _AGENT, str(size)]  # fmt: skip
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, env=clean_env(**env)) as proxy:  # fmt: skip
        assert proxy.stdout is not None and proxy.stdin is not None
        digest, count = hashlib.sha256(), 0
        while data := proxy.stdout.read1(1 << 20):  # type: ignore[attr-defined]
            digest.update(data)
            count += len(data)
        proxy.stdin.close()
        stderr = proxy.stderr.read() if proxy.stderr else b""
        assert proxy.wait(timeout=60) == 0, stderr
    assert "Traceback" not in stderr.decode(errors="replace")
    assert (count, digest.hexdigest()) == (size, _expected(size))
    return int(peak_file.read_text()) * 1024, record


@pytest.mark.parametrize("size", [150_000_000, 1 << 30], ids=["150MB", "1GiB"])
def test_a_line_longer_than_held_is_relayed_and_recorded_whole_in_flat_memory(
    tmp_path: Path, size: int
) -> None:
    """An agent's 150 MB (and 1 GiB) line without its end, through ``run`` with the
    recording on: the proxy's peak memory stays under 64 MiB (it grew with the line, to
    the cap, before), the client gets every byte, and the one record holds the whole line,
    byte-exact, as an oversized frame."""
    peak, record = _run_long_line(tmp_path, size)
    assert peak < 64 << 20, f"peak {peak / 2**20:.0f} MiB"
    try:
        head, recorded, digest = _recorded_line(record)
    finally:
        record.unlink()  # (pytest keeps the last runs' directories: not a GiB each)
    assert (recorded, digest) == (size, _expected(size))
    assert head["oversized"] == size and head["unterminated"] is True
    violations = head["violations"]
    assert isinstance(violations, list) and [v["rule"] for v in violations] == ["oversized-frame"]


def test_a_whole_recorded_long_line_is_read_by_the_readers(tmp_path: Path) -> None:
    """Every reader reads the record of a line past the cap (validate, show), and says what
    it is; a reader bounded below its size says so in one line, with no traceback."""
    size = 3 << 20
    _, record = _run_long_line(tmp_path, size, ACP_PROXY_MAX_FRAME=str(1 << 20))
    checked = invoke("validate", str(record))
    said = f"error oversized-frame: the agent sent a line of {size:,} bytes"
    assert said in checked.stdout.decode()
    shown = invoke("show", str(record))
    assert shown.returncode == 0, shown.stderr
    assert f"(a line of {size:,} bytes, recorded whole)" in shown.stdout.decode()
    bounded = {"ACP_PROXY_MAX_RECORD": str(1 << 20)}
    for reader in ("validate", "show"):
        refused = invoke(reader, str(record), env=bounded)
        assert refused.returncode != 0 and b"Traceback" not in refused.stderr
        assert b"line 2 is longer than 1,048,576 bytes" in refused.stderr
        assert b"ACP_PROXY_MAX_RECORD" in refused.stderr


def test_a_line_past_a_cap_below_the_hold_is_spooled_and_recorded_whole(tmp_path: Path) -> None:
    """A framer never holds more than its cap, even with a greater hold: a line past a
    small cap is spooled too, and its record (the whole line in base64) reads back as the
    relay observed it, an oversized frame, whole."""
    spooler = Spooler(tmp_path, 10, get_logger())
    framer = Framer(10, hold=1 << 20)
    assert framer.hold == 10
    items = framer.parts(b"0123456789abc") + framer.parts(b"def\n{}\n")
    assert [type(i) for i in items] == [LinePiece, LineEnd, bytes]
    whole = Framer(10, hold=100)  # a line past the cap that lies in one chunk: handed out too
    assert whole.parts(b"0123456789abcdef\n{}\n") == [LineEnd(b"0123456789abcdef", 16), b"{}"]
    assert whole.handed and whole.parts(b"{}\n") == [b"{}"] and not whole.handed
    assert isinstance(items[0], LinePiece)
    spooler.piece(items[0].data)
    end = items[1]
    assert isinstance(end, LineEnd) and end.size == 16
    frame = spooler.end(end)
    assert isinstance(frame, SpooledFrame) and frame.spool is not None
    assert frame.raw == b"0123456789abcdef"[:PREVIEW] and frame.oversized == 16
    before, after = base64_record_ends(1, "t", "agent", frame)
    out = tmp_path / "record"
    with out.open("wb") as file:
        file.write(before)
        file.flush()
        frame.spool.copy_base64(file.fileno())
        file.write(after)
    spooler.release()
    read = parse_record(2, out.read_bytes())
    assert isinstance(read, FrameRecord)
    assert read.frame.raw == b"0123456789abcdef" and read.frame.oversized == 16
    assert orjson.loads(out.read_bytes())["base64"] == base64.b64encode(read.frame.raw).decode()


def test_a_spooled_line_within_the_cap_is_read_back_whole(tmp_path: Path) -> None:
    """A line longer than the hold but within the cap comes back as its bytes, to be
    observed and recorded as any line (JSON spliced in as ``msg``), however it was cut."""
    line = b'{"jsonrpc":"2.0","method":"_x","params":{"data":"' + b"y" * 5000 + b'"}}'
    for step in (1, 7, 100, 4096):
        spooler, framer = Spooler(tmp_path, 1 << 20, get_logger()), Framer(1 << 20, hold=64)
        out: list[object] = []
        data = line + b"\n{}\n"
        for start in range(0, len(data), step):
            for item in framer.parts(data[start : start + step]):
                if isinstance(item, LinePiece):
                    spooler.piece(item.data)
                elif isinstance(item, LineEnd):
                    out.append(bytes(spooler.end(item)))  # type: ignore[arg-type]
                else:
                    out.append(item)
        assert out == [line, b"{}"], step


def test_an_unterminated_spooled_line_ends_with_the_stream(tmp_path: Path) -> None:
    """The last line of a stream without its newline, longer than the hold, ends with the
    stream: parts(b"") gives its end, unterminated."""
    framer = Framer(hold=4)
    pieces = framer.parts(b'{"a":') + framer.parts(b"1}")
    end = framer.parts(b"")
    assert b"".join(p.data for p in pieces if isinstance(p, LinePiece)) == b'{"a":1}'
    assert end == [LineEnd(b"", 7, terminated=False)]
    spooler = Spooler(tmp_path, 100, get_logger())
    for piece in pieces:
        assert isinstance(piece, LinePiece)
        spooler.piece(piece.data)
    assert isinstance(end[0], LineEnd)
    frame = spooler.end(end[0])
    assert not isinstance(frame, bytes | bytearray)
    assert frame.value == {"a": 1} and not frame.terminated


def test_a_spool_that_cannot_be_written_leaves_the_line_s_beginning_and_size(
    tmp_path: Path,
) -> None:
    """A spool that cannot be made (a directory gone) never raises: the line is observed
    (and recorded) as its beginning and its size, as before spooling."""
    spooler = Spooler(tmp_path / "gone", 1 << 20, get_logger())
    with capture_logs() as logs:
        spooler.piece(b"x" * 100)
        spooler.piece(b"y" * 100)
        frame = spooler.end(LineEnd(b"z", 201))
        spooler.piece(b"next line")
        again = spooler.end(LineEnd(b"", 9))
    assert not isinstance(frame, bytes | bytearray) and not isinstance(frame, SpooledFrame)
    assert frame.raw == b"x" * 100 + b"y" * 100 + b"z" and frame.oversized == 201
    assert not isinstance(again, bytes | bytearray) and again.raw == b"next line"
    assert [entry["log_level"] for entry in logs] == ["error"]  # said once
    spooler.close()


def test_a_long_base64_record_reads_as_the_short_way_reads_it() -> None:
    """A frame record past a MiB whose bytes are its last key, ``base64`` (as a long line is
    recorded), is read from the line without its string made text: the same frame, findings
    and size as the usual parse gives; a body that does not decode is an unreadable line."""
    from acp_proxy.core.framing import oversized_frame
    from acp_proxy.transcript.records import UnreadableLine, _record

    data = bytes(range(256)) * 8192  # 2 MiB, no JSON
    frame = oversized_frame(data[:10], len(data), terminated=False)
    found = [{"rule": "oversized-frame", "level": "error", "message": "m", "spec": "s"}]
    before, after = base64_record_ends(4, "t", "agent", frame, found)
    line = before + base64.b64encode(data) + after
    read = parse_record(7, line)
    assert isinstance(read, FrameRecord)
    usual = _record(7, line, "frame", orjson.loads(line))
    assert isinstance(usual, FrameRecord)
    assert (read.seq, read.side, read.violations, read.frame) == (
        usual.seq, usual.side, usual.violations, usual.frame
    )  # fmt: skip
    assert read.frame.raw == data and read.frame.oversized == len(data)
    assert not read.frame.terminated
    broken = before + base64.b64encode(data)[:-1] + b"!" + after
    assert isinstance(parse_record(7, broken), UnreadableLine)
