"""``python -m acp_proxy.bench``: measure the relay, with and without the proxy.

Prints figures; asserts nothing (the machines are shared and noisy, so
performance is read, not tested). The agent is ``cat``, which echoes every
line, so each figure covers both directions of the relay.

- round trip: one small JSON-RPC line out and back, one at a time;
- small frames: many ~200-byte lines streamed through;
- one big frame: a single line of many megabytes.

Each is measured directly against ``cat``, through ``acp-proxy run
--no-record``, and through ``acp-proxy run`` recording to a temporary file.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable

__all__ = ["main"]


def _command(mode: str, record_dir: str) -> list[str]:
    if mode == "direct":
        return ["cat"]
    proxy = [sys.executable, "-m", "acp_proxy", "run", "--log-level", "error"]
    if mode == "proxy":
        return [*proxy, "--no-record", "--", "cat"]
    return [*proxy, "--record", os.path.join(record_dir, "bench.jsonl"), "--", "cat"]


def round_trips(command: list[str], count: int) -> list[float]:
    """Seconds per round trip of one small line."""
    line = b'{"jsonrpc":"2.0","method":"_bench/ping","params":{"n":1}}\n'
    times: list[float] = []
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        for _ in range(count):
            start = time.perf_counter()
            proc.stdin.write(line)
            proc.stdin.flush()
            proc.stdout.readline()
            times.append(time.perf_counter() - start)
        proc.stdin.close()
        proc.wait()
    return times


def stream(command: list[str], payload: bytes) -> float:
    """Seconds to push ``payload`` through and read it all back."""
    received = 0

    def drain(out: Callable[[int], bytes]) -> None:
        nonlocal received
        while chunk := out(1 << 20):
            received += len(chunk)

    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        # a BufferedReader: read1 returns what is there instead of waiting for 1 MiB
        reader = threading.Thread(target=drain, args=(proc.stdout.read1,))  # type: ignore[attr-defined]
        start = time.perf_counter()
        reader.start()
        proc.stdin.write(payload)
        proc.stdin.close()
        reader.join()
        elapsed = time.perf_counter() - start
        proc.wait()
    if received != len(payload):
        raise SystemExit(f"bench: {received} of {len(payload)} bytes came back")
    return elapsed


def main(argv: list[str] | None = None) -> None:
    """Run the benchmarks and print a table."""
    parser = argparse.ArgumentParser(prog="python -m acp_proxy.bench", description=__doc__)
    parser.add_argument("--round-trips", type=int, default=2000)
    parser.add_argument("--small-frames", type=int, default=100_000)
    parser.add_argument("--big-frame-mb", type=int, default=100)
    args = parser.parse_args(argv)
    # An extension notification (cat echoes it, so both sides send it: a standard
    # method would be flagged as sent by the wrong side), shaped like a chunk update.
    small = (
        b'{"jsonrpc":"2.0","method":"_bench/update","params":{"sessionId":"s","update":'
        b'{"sessionUpdate":"agent_message_chunk","messageId":"m",'
        b'"content":{"type":"text","text":"hello world"}}}}\n'
    )
    small_payload = small * args.small_frames
    big_payload = (
        b'{"jsonrpc":"2.0","method":"_big","params":{"data":"'
        + b"x" * (args.big_frame_mb << 20)
        + b'"}}\n'
    )
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; agent: cat")
    print(
        f"{'':<22}{'rtt p50 µs':>12}{'rtt p95 µs':>12}"
        f"{'small frames/s':>16}{'small MB/s':>12}{'big MB/s':>10}"
    )
    with tempfile.TemporaryDirectory() as record_dir:
        for mode, label in (
            ("direct", "cat alone"),
            ("proxy", "proxy, --no-record"),
            ("record", "proxy, recording"),
        ):
            command = _command(mode, record_dir)
            rtt = round_trips(command, args.round_trips)
            p50 = statistics.median(rtt) * 1e6
            p95 = statistics.quantiles(rtt, n=20)[-1] * 1e6
            small_s = stream(command, small_payload)
            big_s = stream(command, big_payload)
            print(
                f"{label:<22}{p50:>12.0f}{p95:>12.0f}"
                f"{args.small_frames / small_s:>16,.0f}{len(small_payload) / small_s / 1e6:>12.1f}"
                f"{len(big_payload) / big_s / 1e6:>10.1f}"
            )
            record = os.path.join(record_dir, "bench.jsonl")
            if os.path.exists(record):
                os.remove(record)


if __name__ == "__main__":
    main()
