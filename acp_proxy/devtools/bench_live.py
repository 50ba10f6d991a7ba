"""The benchmark's live workloads (:mod:`acp_proxy.devtools.bench`): the frames its agents
and clients exchange, how each setup starts its agent, what a process costs (from
``/proc``), and one run of each workload through a setup (stream, ping-pong, start, big,
line, long, pending, the client's turn and its attacks). Each returns its figures; the
tables (:mod:`acp_proxy.devtools.bench_tables`) print them.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

import orjson

INFO = {"name": "bench", "version": "1"}
CHUNK = (
    b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s","update":'
    b'{"sessionUpdate":"agent_message_chunk","messageId":"m","content":{"type":"text","text":"'
    + b"lorem ipsum dolor sit amet " * 6
    + b'"}}}}\n'
)
SETUPS = ("direct", "tee", "proxy", "no-record")


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
