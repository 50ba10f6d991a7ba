"""``python -m acp_proxy.devtools.bench``: what the proxy costs, against a direct connection,
in one run.

Prints figures; asserts nothing (the machines are shared and noisy, so performance is
read, not tested). Each workload runs through four setups, several times (median, and
the spread min-max):

- ``direct``: the client talks to the agent itself;
- ``tee``: a shell pipeline that records both directions with ``tee`` (the floor of
  what recording costs);
- ``proxy``: ``acp-proxy run`` recording and validating (schema checks included);
- ``no-record``: ``acp-proxy run --no-record`` (validation only).

Workloads:

- **stream**: a v2 session (initialize, session/new, a prompt) in which the agent streams
  ``--frames`` ``agent_message_chunk`` notifications of about 250 bytes to a client
  that parses every line, as an editor does (the prompt once the setup is idle: ``run``
  relays at once and loads observation meanwhile, which the start table measures);
- **ping-pong**: one small line out and back (through ``cat``), ``--round-trips`` times
  (after one, once the setup is idle);
- **start**: how long after a setup is launched its agent begins, and its first line
  reaches the client (``--launches`` launches per run, five by default), in :data:`START_SETUPS`:
  also the floor (the same Python starting the agent from a two-line script), ``probe`` and
  ``chat``; each against the floor and the direct launch;
- **big**: one ``--big-mib`` MiB message out and back (through ``cat``), with the
  proxy's peak memory; and one way, to an agent that answers with a short line;
- **line**: one ``--line-mb`` MB line without its end (an agent that writes it and exits),
  through ``proxy`` and ``no-record``, with the proxy's peak memory (recording, a line too
  long to hold is spooled: flat however long; not recording, it is held up to the cap);
- **long**: ``--long-frames`` frames streamed through the proxy; its memory sampled at
  10%, 50% and 100% (flat means no growth with the session);
- **pending**: a prompt on which the agent first sends ``--pending`` permission requests the
  client never answers, and as many updates naming sessions nobody created, then streams
  ``--pending-frames`` chunks: the stream's speed is what it is with nothing pending (the
  proxy's observation costs O(1) per frame, whatever is pending);
- **offline**: the readers (:data:`READERS`: ``validate``, ``show``, ``stats``, ``report``,
  ``diff``, ``search``, ``replay --as client``...) over the stream's recording;
- **client**: the client core. The stream's turn through ``chat --protocol 2`` (piped: the
  agent's text on stdout) against ``run`` relaying, recording and validating the same turn
  (CPU seconds of the acp-proxy process, start to the end of the turn); and the client
  core's peak memory under an agent that attacks it: ``--flood-reads`` reads of an 8 MiB
  file by an agent that never reads an answer, and a command (``yes``) whose
  ``outputByteLimit`` is 10**12;
- **hostile**: readers over inputs built to be slow (:data:`HOSTILE`), at a size and twice it:
  ``search 'error.*timeout'`` over a ``--hostile-kb`` KB message of ``error error …``, and
  ``diff`` of ``--hostile-chunks`` thought and message chunks in turn against the same less
  its first and last (all between is aligned).

``python -m acp_proxy.devtools.bench agent N`` is the stream workload's agent, ``... sink``
the one-way big message's, ``... line N`` the long line's, ``... attacker MODE PATH N`` the
client table's.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any

import orjson

from acp_proxy.devtools.bench_live import CHUNK, INFO, PERMISSION, _answer, _update, pending_stream
from acp_proxy.devtools.bench_readers import hostile_recording
from acp_proxy.devtools.bench_tables import TABLES, _Bench

__all__ = ["hostile_recording", "main", "pending_stream"]


# --- the stream workload's agent ---------------------------------------------------------


def agent(frames: int) -> None:
    """A v2 agent that answers the handshake and streams ``frames`` chunks on a prompt."""
    out = sys.stdout.buffer

    def send(message: dict[str, Any]) -> None:
        out.write(orjson.dumps({"jsonrpc": "2.0", **message}) + b"\n")

    def update(body: dict[str, Any]) -> None:
        send({"method": "session/update", "params": {"sessionId": "s", "update": body}})

    for line in sys.stdin.buffer:
        message = orjson.loads(line)
        method = message.get("method")
        if method == "initialize":
            send({"id": message["id"], "result": {"protocolVersion": 2, "info": INFO}})
        elif method == "session/new":
            send({"id": message["id"], "result": {"sessionId": "s"}})
        elif method == "session/prompt":
            update({"sessionUpdate": "state_update", "state": "running"})
            content = [{"type": "text", "text": "go"}]
            update({"sessionUpdate": "user_message", "messageId": "u", "content": content})
            send({"id": message["id"], "result": {"messageId": "u"}})
            batch = CHUNK * 1000
            for _ in range(frames // 1000):
                out.write(batch)
            out.write(CHUNK * (frames % 1000))
            update({"sessionUpdate": "state_update", "state": "idle", "stopReason": "end_turn"})
        out.flush()


def pending_agent(count: int, frames: int) -> None:
    """A v2 agent that, on a prompt, leaves ``count`` permission requests pending and names
    ``count`` unknown sessions, then streams ``frames`` chunks (``frames`` only: count 0)."""
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = orjson.loads(line)
        method = message.get("method")
        if method == "initialize":
            out.write(_answer(message, {"protocolVersion": 2, "info": INFO}))
        elif method == "session/new":
            out.write(_answer(message, {"sessionId": "s"}))
        elif method == "session/prompt":
            for n in range(count):
                out.write(PERMISSION % (n, n))
            out.write(_update({"sessionUpdate": "state_update", "state": "running"}))
            out.write(_answer(message, {"messageId": "u"}))
            out.write(CHUNK * frames)
            out.write(_update({"sessionUpdate": "state_update", "state": "idle"}))
        out.flush()


def attacker(mode: str, path: str, count: int) -> None:
    """A v1 agent that attacks the client playing its editor: ``reads`` asks to read
    ``path`` ``count`` times at once and never reads an answer; ``terminal`` runs ``yes``
    with ``outputByteLimit`` 10**12 and asks for its output again and again."""
    out = sys.stdout.buffer

    def send(message: dict[str, Any]) -> None:
        out.write(orjson.dumps({"jsonrpc": "2.0", **message}) + b"\n")
        out.flush()

    line = sys.stdin.buffer.readline()  # initialize
    send({"id": orjson.loads(line)["id"], "result": {"protocolVersion": 1}})
    if mode == "reads":
        for n in range(count):
            send({"id": n, "method": "fs/read_text_file", "params": {"sessionId": "s",
                                                                     "path": path}})  # fmt: skip
        time.sleep(3600)
    create = {"sessionId": "s", "command": "yes", "args": ["y" * 1000], "outputByteLimit": 10**12}
    send({"id": 0, "method": "terminal/create", "params": create})
    sys.stdin.buffer.readline()
    for n in range(1, count):
        output = {"sessionId": "s", "terminalId": "term_1"}
        send({"id": n, "method": "terminal/output", "params": output})
        sys.stdin.buffer.readline()
        time.sleep(0.05)
    time.sleep(3600)


def sink() -> None:
    """An agent that answers each line with a short one (the one-way big message's)."""
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        out.write(b'{"jsonrpc":"2.0","method":"_bench/ack","params":{"bytes":%d}}\n' % len(line))
        out.flush()


def line_agent(size: int) -> None:
    """An agent that writes one line of ``size`` bytes, without its end, and exits."""
    block = b"x" * (1 << 20)
    for start in range(0, size, len(block)):
        piece = memoryview(block)[: min(len(block), size - start)]
        while piece:
            piece = piece[os.write(1, piece) :]


def main(argv: list[str] | None = None) -> None:
    """Run the benchmarks and print the tables."""
    args_in = sys.argv[1:] if argv is None else argv
    if args_in[:1] == ["agent"]:
        agent(int(args_in[1]))
        return
    if args_in[:1] == ["sink"]:
        sink()
        return
    if args_in[:1] == ["line"]:
        line_agent(int(args_in[1]))
        return
    if args_in[:1] == ["pending"]:
        pending_agent(int(args_in[1]), int(args_in[2]))
        return
    if args_in[:1] == ["attacker"]:
        attacker(args_in[1], args_in[2], int(args_in[3]))
        return
    parser = argparse.ArgumentParser(prog="python -m acp_proxy.devtools.bench", description=__doc__)
    parser.add_argument("--frames", type=int, default=200_000, help="stream: chunks per run")
    parser.add_argument("--round-trips", type=int, default=5000)
    parser.add_argument("--big-mib", type=int, default=50)
    parser.add_argument("--long-frames", type=int, default=1_000_000)
    parser.add_argument("--line-mb", type=int, default=150, help="line: its length, in MB")
    parser.add_argument("--pending", type=int, default=100_000, help="pending: requests left")
    parser.add_argument("--pending-frames", type=int, default=20_000, help="pending: chunks after")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure")
    parser.add_argument("--flood-reads", type=int, default=400, help="client: reads asked")
    parser.add_argument("--attack-seconds", type=float, default=4, help="client: per attack")
    parser.add_argument("--launches", type=int, default=5, help="start: launches per run")
    parser.add_argument("--hostile-kb", type=int, default=480, help="hostile: search's message")
    parser.add_argument("--hostile-chunks", type=int, default=32_000, help="hostile: diff's")
    parser.add_argument(
        "--only", action="append", choices=TABLES, metavar="TABLE",
        help=f"only this table (repeatable): {', '.join(TABLES)}",
    )  # fmt: skip
    parser.add_argument(
        "--quick", action="store_true", help="a tenth of everything, one run (a smoke test)"
    )
    args = parser.parse_args(args_in)
    if args.quick:
        args.frames, args.round_trips = args.frames // 10, args.round_trips // 10
        args.big_mib, args.long_frames, args.repeat = max(1, args.big_mib // 10), 0, 1
        args.line_mb = max(1, args.line_mb // 10)
        args.pending, args.pending_frames = args.pending // 10, args.pending_frames // 10
        args.hostile_kb, args.hostile_chunks = args.hostile_kb // 10, args.hostile_chunks // 10
    print(
        f"python {sys.version.split()[0]} on {os.uname().sysname} {os.uname().machine}, "
        f"{os.cpu_count()} cpus; {args.repeat} run(s) per figure, the setups in turn: "
        "median (min-max)"
    )
    only = set(args.only or TABLES)
    if only & {"offline", "page"}:
        only.add("stream")  # (they read its recording)
    with tempfile.TemporaryDirectory() as workdir:
        bench = _Bench(args, workdir)
        recorded = bench.stream_table() if "stream" in only else ""
        for table in TABLES[1:]:
            if table not in only or (table == "long" and not args.long_frames):
                continue
            if table in ("offline", "page"):
                getattr(bench, f"{table}_table")(recorded)
            else:
                getattr(bench, f"{table}_table")()


if __name__ == "__main__":
    main()
