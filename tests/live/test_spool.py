"""A line too long to hold, spooled as it crosses (acp_proxy.live.spool): the recording
relay's memory stays flat however long the line; the line is relayed byte for byte and
recorded whole, in one record every reader reads."""

from __future__ import annotations

import base64
import binascii
import errno
import hashlib
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from structlog.testing import capture_logs

from acp_proxy.core.framing import CutFrame, Framer, LineEnd, LinePiece
from acp_proxy.live.spool import PREVIEW, LineSpool, SpooledFrame, Spooler
from acp_proxy.log import get_logger
from acp_proxy.transcript.records import (
    FrameRecord,
    base64_record_ends,
    frame_record,
    parse_record,
)
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


def test_a_spool_whose_directory_is_not_there_yet_makes_it(tmp_path: Path) -> None:
    """A long line before the recording's directory exists (``run --record out/`` with no
    out/ yet: observation, which makes it, loads after the first lines): the directory is
    made and the line spooled whole (before: its first 64 KiB, as an oversized frame)."""
    spooler = Spooler(tmp_path / "out" / "deeper", 1 << 20, get_logger())
    with capture_logs() as logs:
        spooler.piece(b"x" * 100)
        line = spooler.end(LineEnd(b"z", 101))
    assert line == b"x" * 100 + b"z" and logs == []
    assert (tmp_path / "out" / "deeper").is_dir()
    spooler.close()


def _full_disk(monkeypatch: pytest.MonkeyPatch, room: int) -> None:
    """Spools take ``room`` bytes in all, then fail as a full disk does (ENOSPC)."""
    left = [room]

    def write(self: object, data: bytes | memoryview) -> int:
        if len(data) > left[0]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        left[0] -= len(data)
        return os.write(self.fd, data) if data else 0  # type: ignore[attr-defined]

    monkeypatch.setattr(LineSpool, "_write", write)


@pytest.mark.parametrize("room", [0, 150], ids=["from-the-start", "mid-line"])
def test_a_full_disk_never_cuts_a_line_within_the_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, room: int
) -> None:
    """A spool that cannot be written (a full disk, from its first byte or in the middle of
    the line): a line within the cap is held in memory instead, as a relay that does not
    record holds it, and comes back whole (before: its first 64 KiB as an oversized frame,
    a false ``oversized-frame`` error against the side that sent it). Said once."""
    _full_disk(monkeypatch, room)
    spooler = Spooler(tmp_path, 1 << 20, get_logger())
    with capture_logs() as logs:
        for piece in (b"x" * 100, b"y" * 100, b"w" * 100):
            spooler.piece(piece)
        frame = spooler.end(LineEnd(b"z", 301))
        spooler.piece(b"{")
        again = spooler.end(LineEnd(b"}", 2, terminated=False))
    assert frame == b"x" * 100 + b"y" * 100 + b"w" * 100 + b"z"
    assert not isinstance(again, bytes | bytearray) and again.value == {}
    assert [entry["log_level"] for entry in logs] == ["error"]
    assert "No space left on device" in logs[0]["error"]
    spooler.close()


def test_a_full_disk_past_the_cap_records_the_beginning_and_says_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A line past the cap whose spool cannot be written: observed as an oversized frame (it
    is one), and its record says that only its beginning could be kept, and why (``cut``);
    a reader reads it as the oversized frame it is."""
    _full_disk(monkeypatch, 50)
    spooler = Spooler(tmp_path, 100, get_logger())
    for _ in range(3):
        spooler.piece(b"x" * 60)
    frame = spooler.end(LineEnd(b"", 180))
    assert isinstance(frame, CutFrame) and not isinstance(frame, SpooledFrame)
    assert frame.raw == b"x" * 180 and frame.oversized == 180
    assert frame.cut.startswith("cannot spool it to record it whole: No space left on device")
    record = frame_record(3, "t", "agent", frame)
    assert orjson.loads(record)["cut"] == frame.cut
    read = parse_record(1, record)
    assert isinstance(read, FrameRecord) and read.frame.oversized == 180
    assert isinstance(read.frame, CutFrame) and read.frame.cut == frame.cut
    spooler.close()


#: ``acp-proxy ARGS``, its observation (which makes the recording's directory) loaded a second
#: late, as on a busy machine: what crosses first is framed (and spooled) before it.
_SLOW_OBSERVER = """
import sys, time
import acp_proxy.live.commands.run as run
build = run._observer
def slow(*args, **options):
    time.sleep(1)
    return build(*args, **options)
run._observer = slow
sys.argv = ["acp-proxy", *sys.argv[1:]]
from acp_proxy.cli import main
main()
"""


def test_run_records_a_long_line_whole_before_its_directory_exists(tmp_path: Path) -> None:
    """The README's CI example, ``run --record out/ ... < session.in`` with no out/ yet and a
    6 MB line in session.in: the line is recorded whole, and no side is blamed (before: its
    first 64 KiB, and ``oversized-frame`` against the client)."""
    line = b'{"jsonrpc":"2.0","method":"_x/big","params":{"data":"' + b"y" * 6_000_000 + b'"}}'
    session = tmp_path / "session.in"
    session.write_bytes(line + b"\n")
    out = tmp_path / "out"
    with session.open("rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-c", _SLOW_OBSERVER, "run", "--log-level", "error",
             "--record", "out/", "--", "cat"],
            stdin=stdin, capture_output=True, timeout=120, env=clean_env(), cwd=tmp_path,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == line + b"\n"
    (recording,) = out.glob("*.jsonl")
    frames = [r for r in map(orjson.loads, recording.read_bytes().splitlines())
              if r["kind"] == "frame"]  # fmt: skip
    assert [r["from"] for r in frames] == ["client", "agent"]
    for record in frames:
        assert record["msg"]["params"]["data"] == "y" * 6_000_000
        assert "oversized" not in record and "violations" not in record, record.keys()


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
