"""The benchmark's offline workloads (:mod:`acp_proxy.devtools.bench`): the readers over the
stream's recording (:data:`READERS`), readers over inputs built to be slow
(:data:`HOSTILE`), and the report page drawn in a browser. Each returns its figures; the
tables (:mod:`acp_proxy.devtools.bench_tables`) print them.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time

import orjson

from acp_proxy.devtools.bench_live import _PEAK_REPORTER, HELLO, INFO, PROMPT, _answer, _update

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
