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
import contextlib
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

import orjson

__all__ = ["main"]

INFO = {"name": "bench", "version": "1"}
CHUNK = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
    b'{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"'
    + b"lorem ipsum dolor sit amet " * 6
    + b'"}}}}\n'
)
SETUPS = ("direct", "tee", "proxy", "no-record")

_T = TypeVar("_T")


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


def _answer(request: dict[str, Any], result: dict[str, Any]) -> bytes:
    return orjson.dumps({"jsonrpc": "2.0", "id": request["id"], "result": result}) + b"\n"


def _update(update: dict[str, Any]) -> bytes:
    params = {"sessionId": "s", "update": update}
    return orjson.dumps({"jsonrpc": "2.0", "method": "session/update", "params": params}) + b"\n"


#: A permission request left unanswered, and an update naming a session nobody created.
PERMISSION = (
    b'{"jsonrpc":"2.0","id":"perm-%d","method":"session/request_permission","params":'
    b'{"sessionId":"s","toolCall":{"toolCallId":"t","title":"Run"},"title":"Run?",'
    b'"options":[{"optionId":"allow","name":"Allow","kind":"allow_once"}]}}\n'
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"nowhere-%d",'
    b'"update":{"sessionUpdate":"agent_message_chunk","messageId":"m",'
    b'"content":{"type":"text","text":"x"}}}}\n'
)


#: What a client sends before its prompt: initialize (v2) and session/new.
HELLO = [
    {"jsonrpc": "2.0", "id": 0, "method": "initialize",
     "params": {"protocolVersion": 2, "info": INFO}},
    {"jsonrpc": "2.0", "id": 1, "method": "session/new",
     "params": {"cwd": "/", "mcpServers": []}},
]  # fmt: skip


#: The prompt both workloads time.
PROMPT = {"jsonrpc": "2.0", "id": 2, "method": "session/prompt",
          "params": {"sessionId": "s", "prompt": [{"type": "text", "text": "go"}]}}  # fmt: skip


def _open_session(proc: subprocess.Popen[bytes]) -> None:
    """Send HELLO and read each answer: the session is open."""
    assert proc.stdin is not None and proc.stdout is not None
    for message in HELLO:
        proc.stdin.write(orjson.dumps(message) + b"\n")
        proc.stdin.flush()
        proc.stdout.readline()


def pending_stream(cmd: list[str], frames: int) -> dict[str, Any]:
    """Seconds from the prompt to the first chunk (the pending load), and from there to the
    idle (the stream), every line parsed."""
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        _open_session(proc)
        start = time.perf_counter()
        proc.stdin.write(orjson.dumps(PROMPT) + b"\n")
        proc.stdin.flush()
        loaded = start
        for line in proc.stdout:
            update = orjson.loads(line).get("params", {}).get("update", {})
            if update.get("state") == "running":
                loaded = time.perf_counter()
            elif update.get("state") == "idle":
                break
        end = time.perf_counter()
        proc.stdin.close()
        proc.wait()
    return {"load": loaded - start, "stream": end - loaded, "frames": frames}


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


# --- setups ---------------------------------------------------------------------------------


def command(setup: str, agent_argv: list[str], workdir: str) -> list[str]:
    """How the client starts its agent in a setup."""
    if setup == "direct":
        return agent_argv
    if setup == "tee":
        sent, received = os.path.join(workdir, "in.log"), os.path.join(workdir, "out.log")
        pipeline = f"tee {sent} | {shlex.join(agent_argv)} | tee {received}"
        return ["sh", "-c", pipeline]
    log = os.path.join(workdir, "proxy.log")  # findings (the pending workload's) go there
    proxy = [sys.executable, "-m", "acp_proxy", "run", "--log-level", "error", "--log-file", log]
    if setup == "no-record":
        return [*proxy, "--no-record", "--", *agent_argv]
    return [*proxy, "--record", os.path.join(workdir, "bench.jsonl"), "--", *agent_argv]


def peak_rss(pid: int) -> int | None:
    """The peak resident memory of a live process, in bytes (Linux)."""
    return _status(pid, "VmHWM")


def rss(pid: int) -> int | None:
    """The resident memory of a live process now, in bytes (Linux)."""
    return _status(pid, "VmRSS")


def cpu_seconds(pid: int) -> float | None:
    """The CPU time (user and system) a live process has used so far (Linux)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def settled(pid: int, timeout: float = 10.0) -> None:
    """Wait until a process is idle (its CPU time still for 60 ms; at most ``timeout``
    seconds): ``run`` loads observation while it relays the first frames, and a workload
    measures the relay, not that (the start table does)."""
    deadline = time.monotonic() + timeout
    last, still = cpu_seconds(pid), 0
    while still < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
        now = cpu_seconds(pid)
        still = still + 1 if now == last else 0
        last = now


def _status(pid: int, key: str) -> int | None:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


# --- workloads -------------------------------------------------------------------------------


def stream(cmd: list[str], frames: int, samples: tuple[float, ...] = ()) -> dict[str, Any]:
    """Seconds from the prompt to the idle that ends it, every line parsed; RSS samples."""
    marks = sorted(int(frames * f) for f in samples)
    memory: list[int | None] = []
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        _open_session(proc)
        settled(proc.pid)
        cpu_before = cpu_seconds(proc.pid)
        start = time.perf_counter()
        proc.stdin.write(orjson.dumps(PROMPT) + b"\n")
        proc.stdin.flush()
        count, size = 0, 0
        for line in proc.stdout:
            value = orjson.loads(line)
            count += 1
            size += len(line)
            if marks and count >= marks[0]:
                marks.pop(0)
                memory.append(rss(proc.pid))
            if value.get("params", {}).get("update", {}).get("state") == "idle":
                break
        elapsed = time.perf_counter() - start
        peak = peak_rss(proc.pid)
        cpu_after = cpu_seconds(proc.pid)
        proc.stdin.close()
        proc.wait()
    cpu = None if cpu_before is None or cpu_after is None else cpu_after - cpu_before
    return {
        "seconds": elapsed,
        "frames": count,
        "bytes": size,
        "peak": peak,
        "rss": memory,
        "cpu": cpu,
    }


def turn_cpu(cmd: list[str], frames: int, piped: bool = False) -> float:
    """CPU seconds the acp-proxy process spent from its launch to the end of one turn of
    ``frames`` chunks: as ``run`` (the client opens the session and reads to the idle) or
    as piped ``chat`` (a prompt line in, the agent's text out, read to its last chunk)."""
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) as proc:  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        if piped:
            text = len(orjson.loads(CHUNK)["params"]["update"]["content"]["text"]) * frames
            proc.stdin.write(b"go\n")
            proc.stdin.flush()
            got = 0
            while got < text and (piece := proc.stdout.read1(1 << 16)):  # type: ignore[attr-defined]
                got += len(piece)
        else:
            _open_session(proc)
            proc.stdin.write(orjson.dumps(PROMPT) + b"\n")
            proc.stdin.flush()
            for line in proc.stdout:
                if orjson.loads(line).get("params", {}).get("update", {}).get("state") == "idle":
                    break
        used = cpu_seconds(proc.pid) or 0.0
        proc.stdin.close()
        proc.wait()
    return used


def attacked(argv: list[str], terminal: bool, workdir: str, seconds: float) -> int | None:
    """The peak memory of ``chat`` (the client core) over the attacker ``argv`` for
    ``seconds`` (its ``--timeout``: the attacker answers nothing after ``initialize``)."""
    chat = [sys.executable, "-m", "acp_proxy", "chat", "--no-record", "--timeout", str(seconds),
            *(["--allow-terminal"] if terminal else []), "--", *argv]  # fmt: skip
    peak = None
    with subprocess.Popen(chat, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL, cwd=workdir) as proc:  # fmt: skip
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        proc.stdin.close()
        while proc.poll() is None:
            peak = peak_rss(proc.pid) or peak
            time.sleep(0.05)
    return peak


def ping_pong(cmd: list[str], count: int) -> tuple[list[float], int | None]:
    """Seconds per round trip of one small line (the agent is ``cat``); peak memory."""
    line = b'{"jsonrpc":"2.0","method":"_bench/ping","params":{"n":1}}\n'
    times: list[float] = []
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        # One round trip first, untimed: the first waits for the setup to start.
        proc.stdin.write(line)
        proc.stdin.flush()
        proc.stdout.readline()
        settled(proc.pid)
        for _ in range(count):
            start = time.perf_counter()
            proc.stdin.write(line)
            proc.stdin.flush()
            proc.stdout.readline()
            times.append(time.perf_counter() - start)
        peak = peak_rss(proc.pid)
        proc.stdin.close()
        proc.wait()
    return times, peak


#: An agent that says when it began (its first instruction), in a file (its first argument)
#: and in a notification the proxy relays like any other; then waits for its stdin to close
#: (with a second argument, it ends at once: under probe and chat, which then end too).
_STARTED = (
    "import sys, time; t = time.time(); open(sys.argv[1], 'w').write(repr(t)); "
    'print(\'{"jsonrpc":"2.0","method":"_bench/started","params":{"t":%r}}\' % t,'
    " flush=True); sys.argv[2:] or sys.stdin.read()"
)

#: The tables, in the order they print.
TABLES = ("stream", "ping", "start", "big", "line", "long", "pending", "client", "offline",
          "page", "hostile")  # fmt: skip

#: The start table's setups: a direct launch; the floor (the Python that runs acp-proxy,
#: with its site, starting the agent from a two-line script); run recording and not; the
#: front-ends that start the agent themselves.
START_SETUPS = ("direct", "floor", "proxy", "no-record", "probe", "chat")

#: The floor's script: no Python tool can start an agent sooner.
_FLOOR = "import subprocess, sys\nsys.exit(subprocess.call(sys.argv[1:]))"


#: The agent's process says when it runs (bash's clock, before anything of the agent's own
#: starts), then is the Python agent (:data:`_STARTED`): the first figure is the setup's
#: alone, the second also holds the agent's start-up, slowed by whatever else runs then.
_EXECED = 'printf %s "$EPOCHREALTIME" > "$1"; shift; exec "$@"'


def start(setup: str, workdir: str) -> tuple[float, float | None, float | None]:
    """Seconds from launching a setup until its agent (a Python that starts as fast as
    Python does) begins; until its first line has reached the client (None: probe and
    chat, which are the client); and until the agent's process runs (None: no bash 5 here)."""
    began_file = os.path.join(workdir, "began")
    execed_file = os.path.join(workdir, "execed")
    for stale in (began_file, execed_file):
        with contextlib.suppress(FileNotFoundError):
            os.remove(stale)
    agent_argv = [sys.executable, "-c", _STARTED, began_file]
    bash = shutil.which("bash")
    if bash is not None:
        agent_argv = [bash, "-c", _EXECED, "agent", execed_file, *agent_argv]
    front = setup in ("probe", "chat")
    if setup == "floor":
        cmd = [sys.executable, "-c", _FLOOR, *agent_argv]
    elif front:
        record = ["--record", os.path.join(workdir, f"{setup}.jsonl")]
        cmd = [sys.executable, "-m", "acp_proxy", setup, *record, "--", *agent_argv, "end"]
    else:
        cmd = command(setup, agent_argv, workdir)
    launched = time.time()
    with subprocess.Popen(
        cmd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if front else None,
    ) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        arrived = None
        if not front:
            proc.stdout.readline()
            arrived = time.time() - launched
        proc.stdin.close()
        proc.stdout.read()
        proc.wait(timeout=60)
    with open(began_file, encoding="ascii") as file:
        began = float(file.read())
    execed = None
    with contextlib.suppress(OSError, ValueError), open(execed_file, encoding="ascii") as file:
        execed = float(file.read()) - launched
    return began - launched, arrived, execed


def _big_message(mib: int) -> bytes:
    return b'{"jsonrpc":"2.0","method":"_big","params":{"data":"' + b"x" * (mib << 20) + b'"}}\n'


def big_one_way(cmd: list[str], mib: int) -> dict[str, Any]:
    """One message of ``mib`` MiB to an agent that answers with a short line (:func:`sink`),
    once the setup is up: seconds until the answer is in, and peak memory."""
    payload = _big_message(mib)
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"_bench/ping","params":{"n":1}}\n')
        proc.stdin.flush()
        proc.stdout.readline()
        start = time.perf_counter()
        proc.stdin.write(payload)
        proc.stdin.flush()
        answer = proc.stdout.readline()
        elapsed = time.perf_counter() - start
        peak = peak_rss(proc.pid)
        proc.stdin.close()
        proc.wait()
    if b'"bytes":%d}' % len(payload) not in answer:
        raise SystemExit(f"bench: the agent did not take the message whole: {answer[:200]!r}")
    return {"seconds": elapsed, "bytes": len(payload), "peak": peak}


def big(cmd: list[str], mib: int) -> dict[str, Any]:
    """One message of ``mib`` MiB out and back through ``cat``, once the setup is up;
    seconds and peak memory."""
    payload = _big_message(mib)
    received = 0
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        # One small line out and back first: the clock times the message, not the start
        # of the interpreter (the proxy's) or of the schema checks.
        proc.stdin.write(b'{"jsonrpc":"2.0","method":"_bench/ping","params":{"n":1}}\n')
        proc.stdin.flush()
        proc.stdout.readline()

        def drain(read: Callable[[int], bytes]) -> None:
            nonlocal received
            while received < len(payload) and (chunk := read(1 << 20)):
                received += len(chunk)

        reader = threading.Thread(target=drain, args=(proc.stdout.read1,))  # type: ignore[attr-defined]
        start = time.perf_counter()
        reader.start()
        proc.stdin.write(payload)
        proc.stdin.flush()
        reader.join()
        elapsed = time.perf_counter() - start
        peak = peak_rss(proc.pid)
        proc.stdin.close()
        proc.wait()
    if received != len(payload):
        raise SystemExit(f"bench: {received} of {len(payload)} bytes came back")
    return {"seconds": elapsed, "bytes": len(payload), "peak": peak}


def long_line(cmd: list[str], size: int, peak_file: str) -> dict[str, Any]:
    """One ``size``-byte line without its end through a proxy setup (``cmd`` runs it under
    :data:`_PEAK_REPORTER`, which writes its peak to ``peak_file``): seconds until all of it
    is through, and the proxy's peak memory."""
    start = time.perf_counter()
    received = 0
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE) as proc:
        assert proc.stdin is not None and proc.stdout is not None
        while chunk := proc.stdout.read1(1 << 20):  # type: ignore[attr-defined]
            received += len(chunk)
        proc.stdin.close()
        proc.wait()
    elapsed = time.perf_counter() - start
    if received != size:
        raise SystemExit(f"bench: {received} of {size} bytes came through")
    try:
        with open(peak_file, encoding="ascii") as reported:
            peak: int | None = int(reported.read()) * 1024
    except (OSError, ValueError):
        peak = None
    return {"seconds": elapsed, "bytes": size, "peak": peak}


#: Runs ``acp-proxy`` in process and, at exit, writes its peak memory (KiB) to a file. The
#: peak of a child as the parent reaps it (``wait4``) would count the fork of the bench
#: itself, before the exec.
_PEAK_REPORTER = """
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


#: The readers the offline table times: the command and its options, the recording where
#: ``RECORDING`` stands (``diff`` compares it with itself; ``replay --as client`` plays it
#: against the stream's agent, ``FRAMES`` chunks).
READERS = {
    "validate": ["validate", "RECORDING"],
    "show": ["show", "--color", "never", "RECORDING"],
    "show --conversation": ["show", "--color", "never", "--conversation", "RECORDING"],
    "stats": ["stats", "RECORDING"],
    "report": ["report", "-o", os.devnull, "RECORDING"],
    "diff": ["diff", "RECORDING", "RECORDING"],
    "search": ["search", "never-matches-anything", "RECORDING"],
    "redact": ["redact", "RECORDING", "-o", os.devnull],
    "replay --as client": [
        *("replay", "--as", "client", "RECORDING", "--", sys.executable),
        *("-m", "acp_proxy.devtools.bench", "agent", "FRAMES"),
    ],
}

#: The exit status a reader ends with over the stream's recording, where it is not 0.
STATUS = {"search": 1}  # nothing matches


def offline(recording: str, what: str, frames: int = 0) -> tuple[float, int | None]:
    """Seconds and peak memory (bytes) of a reader (:data:`READERS`) over a recording."""
    peak_file = recording + ".peak"
    start = time.perf_counter()
    fill = {"RECORDING": recording, "FRAMES": str(frames)}
    command = [fill.get(arg, arg) for arg in READERS[what]]
    status = subprocess.run(
        [sys.executable, "-c", _PEAK_REPORTER, peak_file, *command],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    ).returncode
    elapsed = time.perf_counter() - start
    if status != STATUS.get(what, 0):
        raise RuntimeError(f"{' '.join(command)} exited {status}: its time says nothing")
    try:
        with open(peak_file, encoding="ascii") as reported:
            return elapsed, int(reported.read()) * 1024
    except (OSError, ValueError):
        return elapsed, None


# --- hostile inputs: what a backtracking search or a quadratic diff would take long over ----------

#: The hostile workloads: what they are, and the reader command over their recording.
HOSTILE = {
    "search": ("search 'error.*timeout', a message of 'error error …'", "KB",
               ["search", "error.*timeout", "RECORDING"]),
    "diff": ("diff, thought and message chunks alternating", "chunks",
             ["diff", "--no-color", "RECORDING", "OTHER"]),
}  # fmt: skip


def hostile_recording(path: str, workload: str, size: int, trimmed: bool = False) -> None:
    """A recording for a :data:`HOSTILE` workload: ``search``, one agent message of ``size``
    KB of ``error `` (no ``timeout`` in it); ``diff``, ``size`` chunks, thought and message
    in turn (``trimmed``: without the first and the last, so that all between is aligned)."""
    from acp_proxy.core.framing import parse_frame  # noqa: PLC0415 - the bench's own runs
    from acp_proxy.transcript.records import frame_record, start_record  # noqa: PLC0415

    t = "2026-01-01T00:00:00.000000Z"
    frames: list[tuple[str, bytes]] = [("client", orjson.dumps(m)) for m in HELLO[:1]]
    frames.append(("agent", _answer(HELLO[0], {"protocolVersion": 2, "info": INFO})[:-1]))
    frames.append(("client", orjson.dumps(HELLO[1])))
    frames.append(("agent", _answer(HELLO[1], {"sessionId": "s"})[:-1]))
    frames.append(("client", orjson.dumps(PROMPT)))
    if workload == "search":
        text = "error " * (size * 1024 // 6)
        chunks = [_update({"sessionUpdate": "agent_message_chunk", "messageId": "m",
                           "content": {"type": "text", "text": text}})]  # fmt: skip
    else:
        kinds = ("agent_thought_chunk", "agent_message_chunk")
        chunks = [
            _update({"sessionUpdate": kinds[i % 2], "messageId": f"m{i % 2}",
                     "content": {"type": "text", "text": f"word {i} "}})
            for i in range(size)
        ]  # fmt: skip
        chunks = chunks[1:-1] if trimmed else chunks
    frames += [("agent", chunk[:-1]) for chunk in chunks]
    frames.append(("agent", _answer(PROMPT, {"stopReason": "end_turn"})[:-1]))
    with open(path, "wb") as out:
        out.write(start_record(t, ["bench"], None))
        for seq, (side, raw) in enumerate(frames, 1):
            out.write(frame_record(seq, t, side, parse_frame(raw)))


def hostile(workdir: str, workload: str, size: int) -> float:
    """Seconds a reader takes over a :data:`HOSTILE` workload of ``size``."""
    path = os.path.join(workdir, f"hostile-{workload}.jsonl")
    other = os.path.join(workdir, f"hostile-{workload}-trimmed.jsonl")
    hostile_recording(path, workload, size)
    hostile_recording(other, workload, size, trimmed=True)
    fill = {"RECORDING": path, "OTHER": other}
    command = [fill.get(arg, arg) for arg in HOSTILE[workload][2]]
    start = time.perf_counter()
    status = subprocess.run(
        [sys.executable, "-m", "acp_proxy", *command],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
    ).returncode  # fmt: skip
    elapsed = time.perf_counter() - start
    if status != 1:  # nothing matches; the two differ
        raise RuntimeError(f"{' '.join(command)} exited {status}: its time says nothing")
    return elapsed


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


def open_page(page: str, workdir: str) -> float | None:
    """Milliseconds until a report page is drawn in headless Chromium; None without one."""
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        return None
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={os.path.join(workdir, 'chromium')}", "--window-size=1400,1000",
         "--dump-dom", "file://" + page],
        capture_output=True, timeout=300, check=False,
    )  # fmt: skip
    found = re.search(rb'data-ready-ms="(\d+)"', proc.stdout)
    return float(found.group(1)) if found else None


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
