"""The benchmark's tables (:mod:`acp_proxy.devtools.bench`): each workload run through its
setups in turn, several times, and printed as a table (median, and the spread min-max).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
from collections.abc import Callable
from typing import Any, TypeVar

from acp_proxy.devtools.bench_live import (
    _PEAK_REPORTER,
    SETUPS,
    START_SETUPS,
    attacked,
    big,
    big_one_way,
    command,
    long_line,
    pending_stream,
    ping_pong,
    start,
    stream,
    turn_cpu,
)
from acp_proxy.devtools.bench_readers import HOSTILE, READERS, hostile, offline, open_page

_T = TypeVar("_T")

#: The tables, in the order they print.
TABLES = ("stream", "ping", "start", "big", "line", "long", "pending", "client", "offline",
          "page", "hostile")  # fmt: skip

# --- the table ---------------------------------------------------------------------------------


def _spread(values: list[float], scale: float = 1.0, fmt: str = "{:,.2f}") -> str:
    middle = fmt.format(statistics.median(values) * scale)
    if len(values) == 1:
        return middle
    low, high = fmt.format(min(values) * scale), fmt.format(max(values) * scale)
    return f"{middle} ({low}-{high})"


def _mib(value: int | None) -> str:
    return "-" if value is None else f"{value / (1 << 20):,.0f} MiB"


def _cpu_per_frame(runs: list[dict[str, Any]], setup: str) -> str:
    """The proxy's CPU time per frame, median (min-max): steadier than the wall clock on a
    shared machine ("-" for a setup with no proxy)."""
    spent = [r["cpu"] / r["frames"] for r in runs if r["cpu"] is not None and r["frames"]]
    if setup not in ("proxy", "no-record") or not spent:
        return "-"
    return _spread(spent, 1e6, "{:,.1f}")


def _peak(peaks: list[int | None], setup: str = "proxy") -> str:
    """The highest peak memory over the runs of a setup ("-" for a setup with no proxy)."""
    known = [peak for peak in peaks if peak is not None]
    return _mib(max(known)) if setup in ("proxy", "no-record", "client") and known else "-"


class _Bench:
    """One run of every table, in a scratch directory."""

    def __init__(self, args: argparse.Namespace, workdir: str) -> None:
        self.args = args
        self.workdir = workdir
        self.record = os.path.join(workdir, "bench.jsonl")

    def fresh(self) -> None:
        for name in ("bench.jsonl", "in.log", "out.log"):
            path = os.path.join(self.workdir, name)
            if os.path.exists(path):
                os.remove(path)

    def cmd(self, setup: str, agent_argv: list[str]) -> list[str]:
        self.fresh()
        return command(setup, agent_argv, self.workdir)

    def rounds(self, run: Callable[[str], _T], repeat: int) -> dict[str, list[_T]]:
        """``run`` for every setup, ``repeat`` rounds of all four in turn (each round
        starting one setup further on): a busy spell on a shared machine falls on every
        setup alike instead of on one setup's runs."""
        results: dict[str, list[_T]] = {setup: [] for setup in SETUPS}
        for round_ in range(repeat):
            for i in range(len(SETUPS)):
                setup = SETUPS[(round_ + i) % len(SETUPS)]
                results[setup].append(run(setup))
        return results

    def stream_table(self) -> str:
        """The stream workload; returns the path of a recording of it."""
        args = self.args
        agent_argv = [sys.executable, "-m", "acp_proxy.devtools.bench", "agent", str(args.frames)]
        print(f"\nstream: {args.frames:,} agent_message_chunk notifications (~250 bytes each)")
        print(
            f"{'setup':<11}{'seconds':>24}{'frames/s':>14}{'MB/s':>9}{'vs direct':>11}"
            f"{'proxy peak':>12}{'proxy CPU µs/frame':>20}"
        )
        direct: float | None = None
        results = self.rounds(
            lambda setup: stream(self.cmd(setup, agent_argv), args.frames), args.repeat
        )
        for setup, runs in results.items():
            seconds = [r["seconds"] for r in runs]
            median = statistics.median(seconds)
            direct = direct or median
            print(
                f"{setup:<11}{_spread(seconds):>24}{runs[0]['frames'] / median:>14,.0f}"
                f"{runs[0]['bytes'] / median / 1e6:>9.1f}{median / direct:>10.2f}x"
                f"{_peak([r['peak'] for r in runs], setup):>12}"
                f"{_cpu_per_frame(runs, setup):>20}"
            )
        recorded = self.record + ".stream"
        stream(self.cmd("proxy", agent_argv), args.frames)
        os.replace(self.record, recorded)
        return recorded

    def ping_table(self) -> None:
        args = self.args
        print(f"\nping-pong: {args.round_trips:,} round trips of one small line through cat")
        print(
            f"{'setup':<11}{'p50 µs':>22}{'p99 µs':>22}{'added p50':>11}{'added p99':>11}"
            f"{'proxy peak':>12}"
        )
        base: tuple[float, float] | None = None
        results = self.rounds(
            lambda setup: ping_pong(self.cmd(setup, ["cat"]), args.round_trips), args.repeat
        )
        for setup, runs in results.items():
            p50s, p99s, peaks = [], [], []
            for times, peak in runs:
                times.sort()
                p50s.append(times[len(times) // 2])
                p99s.append(times[int(len(times) * 0.99)])
                peaks.append(peak)
            p50, p99 = statistics.median(p50s), statistics.median(p99s)
            base = base or (p50, p99)
            print(
                f"{setup:<11}{_spread(p50s, 1e6, '{:,.0f}'):>22}{_spread(p99s, 1e6, '{:,.0f}'):>22}"
                f"{(p50 - base[0]) * 1e6:>11,.0f}{(p99 - base[1]) * 1e6:>11,.0f}"
                f"{_peak(peaks, setup):>12}"
            )

    def start_table(self) -> None:
        """How soon each setup's agent begins, against the floor and a direct launch in
        the same run (the setups in turn, round after round)."""
        print(
            "\nstart: from launching the setup until the agent's process runs, until the agent"
            " (a Python) begins, and until its first line is in (ms; floor: the same Python"
            " starting it from a two-line script; on 2 cores the agent's own start-up shares"
            " them with the setup's)"
        )
        print(
            f"{'setup':<11}{'agent runs ms':>16}{'vs floor':>9}{'agent begins ms':>19}"
            f"{'first line ms':>18}{'vs floor':>10}{'vs direct':>11}"
        )
        results: dict[str, list[tuple[float, float | None, float | None]]] = {
            s: [] for s in START_SETUPS
        }
        for round_ in range(self.args.repeat * self.args.launches):
            for i in range(len(START_SETUPS)):
                setup = START_SETUPS[(round_ + i) % len(START_SETUPS)]
                self.fresh()
                results[setup].append(start(setup, self.workdir))
        begins = {setup: statistics.median(r[0] for r in runs) for setup, runs in results.items()}
        runs_at = {
            setup: [r[2] for r in runs if r[2] is not None] for setup, runs in results.items()
        }
        for setup, runs in results.items():
            lines = [r[1] for r in runs if r[1] is not None]
            first = _spread(lines, 1e3, "{:,.0f}") if lines else "-"
            execs, floor = runs_at[setup], runs_at["floor"]
            ran, ran_vs = "-", "-"
            if execs and floor:
                ran = _spread(execs, 1e3, "{:,.0f}")
                ran_vs = f"{(statistics.median(execs) - statistics.median(floor)) * 1e3:+,.0f}"
            print(
                f"{setup:<11}{ran:>16}{ran_vs:>9}"
                f"{_spread([r[0] for r in runs], 1e3, '{:,.0f}'):>19}{first:>18}"
                f"{(begins[setup] - begins['floor']) * 1e3:>+10,.0f}"
                f"{(begins[setup] - begins['direct']) * 1e3:>+11,.0f}"
            )

    def big_table(self) -> None:
        args = self.args
        print(f"\nbig: one {args.big_mib} MiB message out and back through cat")
        self._big_rows(
            self.rounds(lambda setup: big(self.cmd(setup, ["cat"]), args.big_mib), args.repeat)
        )
        print(f"\nbig, one way: one {args.big_mib} MiB message to an agent that answers briefly")
        sink_argv = [sys.executable, "-m", "acp_proxy.devtools.bench", "sink"]
        self._big_rows(
            self.rounds(
                lambda setup: big_one_way(self.cmd(setup, sink_argv), args.big_mib), args.repeat
            )
        )

    def _big_rows(self, results: dict[str, list[dict[str, Any]]]) -> None:
        print(f"{'setup':<11}{'seconds':>24}{'MB/s':>9}{'vs direct':>11}{'peak memory':>14}")
        direct: float | None = None
        for setup, runs in results.items():
            seconds = [r["seconds"] for r in runs]
            median = statistics.median(seconds)
            direct = direct or median
            peak = max((r["peak"] or 0) for r in runs) if setup in ("proxy", "no-record") else None
            ratio = f"{peak / runs[0]['bytes']:.1f}x msg" if peak else ""
            print(
                f"{setup:<11}{_spread(seconds):>24}{runs[0]['bytes'] / median / 1e6:>9.1f}"
                f"{median / direct:>10.2f}x{_mib(peak):>14} {ratio}".rstrip()
            )

    def line_table(self) -> None:
        size = self.args.line_mb * 1_000_000
        print(f"\nline: one {self.args.line_mb} MB line without its end, from the agent")
        print(f"{'setup':<11}{'seconds':>24}{'MB/s':>9}{'peak memory':>14}")
        agent_argv = [sys.executable, "-m", "acp_proxy.devtools.bench", "line", str(size)]
        peak_file = os.path.join(self.workdir, "line.peak")

        def run(setup: str) -> dict[str, Any]:
            proxy = self.cmd(setup, agent_argv)
            assert proxy[1:3] == ["-m", "acp_proxy"]
            return long_line([sys.executable, "-c", _PEAK_REPORTER, peak_file, *proxy[3:]],
                             size, peak_file)  # fmt: skip

        for setup in ("proxy", "no-record"):
            runs = [run(setup) for _ in range(self.args.repeat)]
            seconds = [r["seconds"] for r in runs]
            peak = max((r["peak"] or 0) for r in runs) or None
            print(
                f"{setup:<11}{_spread(seconds):>24}{size / statistics.median(seconds) / 1e6:>9.1f}"
                f"{_mib(peak):>14}"
            )

    def long_table(self) -> None:
        frames = self.args.long_frames
        print(f"\nlong: {frames:,} frames through acp-proxy run; its memory as it goes")
        print(f"{'setup':<11}{'at 10%':>12}{'at 50%':>12}{'at 100%':>12}{'seconds':>10}")
        agent_argv = [sys.executable, "-m", "acp_proxy.devtools.bench", "agent", str(frames)]
        for setup in ("proxy", "no-record"):
            run = stream(self.cmd(setup, agent_argv), frames, (0.1, 0.5, 1.0))
            samples = [_mib(m) for m in run["rss"]] + ["-"] * (3 - len(run["rss"]))
            print(
                f"{setup:<11}{samples[0]:>12}{samples[1]:>12}{samples[2]:>12}"
                f"{run['seconds']:>10.1f}"
            )

    def pending_table(self) -> None:
        args = self.args
        count, frames = args.pending, args.pending_frames
        print(
            f"\npending: {count:,} permission requests left unanswered and {count:,} updates "
            f"naming unknown sessions, then {frames:,} chunks"
        )
        print(f"{'setup':<11}{'pending':>10}{'load s':>12}{'stream s':>12}{'chunks/s':>12}")
        for setup in ("direct", "proxy", "no-record"):
            for load in (0, count):
                agent_argv = [sys.executable, "-m", "acp_proxy.devtools.bench", "pending"]
                agent_argv += [str(load), str(frames)]
                runs = [
                    pending_stream(self.cmd(setup, agent_argv), frames) for _ in range(args.repeat)
                ]
                stream_s = statistics.median(r["stream"] for r in runs)
                print(
                    f"{setup:<11}{load:>10,}{statistics.median(r['load'] for r in runs):>12.2f}"
                    f"{stream_s:>12.3f}{frames / stream_s:>12,.0f}"
                )

    def client_table(self) -> None:
        """chat's CPU against run's over the stream's turn; the client core's peak memory
        under the attacks (:func:`attacker`)."""
        args = self.args
        bench_agent = [sys.executable, "-m", "acp_proxy.devtools.bench"]
        turn = [*bench_agent, "agent", str(args.frames)]
        print(f"\nclient: one turn of {args.frames:,} chunks, CPU of the acp-proxy process")
        print(f"{'front-end':<44}{'CPU seconds':>20}{'vs run':>10}")
        chat = [sys.executable, "-m", "acp_proxy", "chat", "--protocol", "2"]
        record = ["--record", os.path.join(self.workdir, "chat.jsonl")]
        for recorded in (True, False):
            run_cmd = self.cmd("proxy" if recorded else "no-record", turn)
            chat_cmd = [*chat, *(record if recorded else ["--no-record"]), "--", *turn]
            run_cpu = [turn_cpu(run_cmd, args.frames) for _ in range(args.repeat)]
            chat_cpu = [turn_cpu(chat_cmd, args.frames, piped=True) for _ in range(args.repeat)]
            base = statistics.median(run_cpu)
            how = "recording" if recorded else "--no-record"
            for name, runs in ((f"run {how} (relay, validate)", run_cpu),
                               (f"chat {how}, piped (+ parse all, draw)", chat_cpu)):  # fmt: skip
                print(f"{name:<44}{_spread(runs):>20}{statistics.median(runs) / base:>9.2f}x")
        print("client: chat's peak memory (the client core's) under an agent that attacks it")
        big = os.path.join(self.workdir, "big.txt")
        with open(big, "wb") as file:
            file.write(b"x" * (8 * 1024 * 1024 - 16))
        attacks = (
            (f"{args.flood_reads} reads of 8 MiB, none read", False,
             [*bench_agent, "attacker", "reads", big, str(args.flood_reads)]),
            ("a terminal asking 10**12 bytes of output", True,
             [*bench_agent, "attacker", "terminal", "-", "40"]),
        )  # fmt: skip
        for name, terminal, argv in attacks:
            peaks = [
                attacked(argv, terminal, self.workdir, args.attack_seconds)
                for _ in range(args.repeat)
            ]
            print(f"{name:<56}{_peak(peaks, 'client'):>12}")

    def offline_table(self, recorded: str) -> None:
        frames = self.args.frames + 8
        print(f"\noffline: over the stream's recording ({frames:,} frames)")
        print(f"{'command':<20}{'seconds':>18}{'frames/s':>14}{'peak':>12}")
        for what in READERS:
            runs = [offline(recorded, what, self.args.frames) for _ in range(self.args.repeat)]
            seconds = [run[0] for run in runs]
            print(
                f"{what:<20}{_spread(seconds):>18}{frames / statistics.median(seconds):>14,.0f}"
                f"{_peak([run[1] for run in runs]):>12}"
            )

    def page_table(self, recorded: str) -> None:
        """The report of the stream's recording: its size against the recording's, and how
        long it takes to open in headless Chromium (where there is one), until its script
        has drawn the page (its ``data-ready-ms``)."""
        frames = self.args.frames + 8
        print(f"\npage: the report of the stream's recording ({frames:,} frames)")
        print(f"{'recording':>12}{'page':>12}{'vs recording':>15}{'opens in':>26}")
        page = os.path.join(self.workdir, "stream.html")
        subprocess.run(
            [sys.executable, "-m", "acp_proxy", "report", recorded, "-o", page],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            check=True,
        )
        size, recording = os.path.getsize(page), os.path.getsize(recorded)
        opens = [open_page(page, self.workdir) for _ in range(self.args.repeat)]
        known = [ms for ms in opens if ms is not None]
        shown = f"{_spread(known, fmt='{:,.0f}')} ms" if known else "-"
        sizes = f"{recording / 1e6:>9.1f} MB{size / 1e6:>9.1f} MB{size / recording:>14.2f}x"
        print(f"{sizes}  {shown:>24}")

    def hostile_table(self) -> None:
        """The readers over inputs built to be slow (:data:`HOSTILE`), at a size and twice
        it: linear time takes twice as long, quadratic four times."""
        args = self.args
        sizes = {"search": args.hostile_kb, "diff": args.hostile_chunks}
        print("\nhostile: readers over inputs built to be slow, at n and 2n (linear: 2x)")
        print(f"{'workload':<56}{'n':>16}{'seconds':>10}{'at 2n':>10}{'ratio':>8}")
        for workload, (what, unit, _) in HOSTILE.items():
            size = sizes[workload]
            once, twice = (
                statistics.median(hostile(self.workdir, workload, n) for _ in range(args.repeat))
                for n in (size, 2 * size)
            )
            print(
                f"{what:<56}{f'{size:,} {unit}':>16}{once:>10.2f}{twice:>10.2f}"
                f"{twice / once:>7.1f}x"
            )
