"""The benchmark runs from end to end and prints every table, every setup, every column.
Its figures are read, never asserted (the machines are shared and noisy): only that
each is there and is a figure. One small workload per table (two runs, for the spread;
one launch a run for start): what is proved is that each table prints its figures."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys

import pytest

SETUPS = ["direct", "tee", "proxy", "no-record"]
NUMBER = r"[\d,]+(?:\.\d+)?"
MIB = rf"{NUMBER} MiB"


@pytest.mark.timeout(600)  # (it measures: on a loaded machine it takes minutes)
def test_one_run_prints_every_workload_for_every_setup() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "acp_proxy.devtools.bench", "--frames", "1000", "--round-trips", "10",
         "--big-mib", "1", "--line-mb", "8", "--long-frames", "1000", "--repeat", "2", "--launches", "1",
         "--pending", "1000", "--pending-frames", "100",
         "--hostile-kb", "8", "--hostile-chunks", "1000", "--flood-reads", "4",
         "--attack-seconds", "1"],
        capture_output=True, text=True, timeout=300, check=True,
    ).stdout  # fmt: skip
    sections = re.split(r"\n\n", out.strip())
    assert sections[0].startswith("python 3.") and "2 run(s) per figure" in sections[0]
    stream, ping, start, big, one_way, line, long, pending, client, offline, page, hostile = (
        s.splitlines() for s in sections[1:]
    )

    assert stream[0].startswith("stream: 1,000 agent_message_chunk")
    rows = dict(zip(SETUPS, stream[2:], strict=True))
    for setup, row in rows.items():
        spread = rf"{NUMBER} \({NUMBER}-{NUMBER}\)"
        proxied = setup in ("proxy", "no-record")
        peak, cpu = (MIB, spread) if proxied else ("-", "-")
        assert re.fullmatch(
            rf"{setup}\s+{spread}\s+{NUMBER}\s+{NUMBER}\s+{NUMBER}x\s+{peak}\s+{cpu}", row
        ), row
    assert " 1.00x " in rows["direct"]

    assert ping[0].startswith("ping-pong: 10 round trips")
    for setup, row in zip(SETUPS, ping[2:], strict=True):
        peak = MIB if setup in ("proxy", "no-record") else "-"
        assert re.fullmatch(
            rf"{setup}(\s+{NUMBER} \({NUMBER}-{NUMBER}\)){{2}}(\s+-?{NUMBER}){{2}}\s+{peak}", row
        ), row

    assert start[0].startswith("start: from launching the setup until the agent's process runs")
    assert start[1].split() == ["setup", "agent", "runs", "ms", "vs", "floor", "agent", "begins",
                                "ms", "first", "line", "ms", "vs", "floor", "vs", "direct"]  # fmt: skip
    starts = ["direct", "floor", "proxy", "no-record", "probe", "chat"]
    for setup, row in zip(starts, start[2:], strict=True):
        spread = rf"{NUMBER} \({NUMBER}-{NUMBER}\)"
        first = "-" if setup in ("probe", "chat") else spread  # (they are the client)
        runs = rf"{spread}\s+[+-]{NUMBER}"  # (bash 5 is on every machine this runs on)
        assert re.fullmatch(
            rf"{setup}\s+{runs}\s+{spread}\s+{first}\s+[+-]{NUMBER}\s+[+-]{NUMBER}", row
        ), row
    assert re.search(r" \+0\s+\S+$", start[3]) and re.search(r" \+0$", start[2])  # (themselves)
    assert re.match(rf"floor\s+{NUMBER} \(\S+\)\s+\+0\s", start[3])

    assert big[0] == "big: one 1 MiB message out and back through cat"
    assert one_way[0] == "big, one way: one 1 MiB message to an agent that answers briefly"
    for table in (big, one_way):
        for setup, row in zip(SETUPS, table[2:], strict=True):
            peak = rf"{MIB} {NUMBER}x msg" if setup in ("proxy", "no-record") else "-"
            assert re.fullmatch(rf"{setup}\s+\S+ \(\S+\)\s+{NUMBER}\s+{NUMBER}x\s+{peak}", row), row

    assert line[0] == "line: one 8 MB line without its end, from the agent"
    for setup, row in zip(["proxy", "no-record"], line[2:], strict=True):
        assert re.fullmatch(rf"{setup}\s+\S+ \(\S+\)\s+{NUMBER}\s+{MIB}", row), row

    assert long[0].startswith("long: 1,000 frames")
    for setup, row in zip(["proxy", "no-record"], long[2:], strict=True):
        assert re.fullmatch(rf"{setup}(\s+{MIB}){{3}}\s+{NUMBER}", row), row

    assert pending[0] == (
        "pending: 1,000 permission requests left unanswered and 1,000 updates naming unknown "
        "sessions, then 100 chunks"
    )
    pending_rows = pending[2:]
    assert len(pending_rows) == 6
    for (setup, load), row in zip(
        [(s, n) for s in ("direct", "proxy", "no-record") for n in ("0", "1,000")],
        pending_rows,
        strict=True,
    ):
        assert re.fullmatch(rf"{setup}\s+{load}(\s+{NUMBER}){{3}}", row), row

    client_table(client)

    assert offline[0] == "offline: over the stream's recording (1,008 frames)"
    readers = [
        *("validate", "show", "show --conversation", "stats", "report", "diff", "search", "redact"),
        "replay --as client",
    ]
    for what, row in zip(readers, offline[2:], strict=True):
        assert re.fullmatch(rf"{what}\s+\S+ \(\S+\)\s+{NUMBER}\s+{MIB}", row), row

    assert page[0] == "page: the report of the stream's recording (1,008 frames)"
    opens = rf"{NUMBER} \({NUMBER}-{NUMBER}\) ms" if shutil.which("chromium") else "-"
    assert re.fullmatch(rf"\s*{NUMBER} MB\s+{NUMBER} MB\s+{NUMBER}x\s+{opens}", page[2]), page[2]

    assert hostile[0] == "hostile: readers over inputs built to be slow, at n and 2n (linear: 2x)"
    for (what, n), row in zip(
        [("search 'error.*timeout', a message of 'error error …'", "8 KB"),
         ("diff, thought and message chunks alternating", "1,000 chunks")],
        hostile[2:],
        strict=True,
    ):  # fmt: skip
        assert re.fullmatch(rf"{re.escape(what)}\s+{n}(\s+{NUMBER}){{2}}\s+{NUMBER}x", row), row


def client_table(client: list[str]) -> None:
    """The client table: chat against run, recorded and not; the attacks' peaks."""
    assert client[0] == "client: one turn of 1,000 chunks, CPU of the acp-proxy process"
    fronts = [f"{f} {how}" for how in ("recording", "--no-record") for f in ("run", "chat")]
    for front, row in zip(fronts, client[2:6], strict=True):
        assert re.fullmatch(rf"{front}.*\s+{NUMBER} \({NUMBER}-{NUMBER}\)\s+{NUMBER}x", row), row
    assert client[6].startswith("client: chat's peak memory (the client core's)")
    assert len(client) == 9
    for row in client[7:]:
        assert re.fullmatch(rf"\d+ reads of 8 MiB, none read\s+{MIB}|a terminal .*\s+{MIB}", row), (
            row
        )
