"""``replay --as client`` drives each recorded prompt's turn to its end as ``drive/turn.py``
says (its response as the wire model pairs it, the frame that closed the turn, its stop
reason), over real processes: against the agent that made the recording it passes; a live
turn that does not end, or ends otherwise than recorded, is a divergence that names it
(tests/probe_agent.py as the agent, v1 and v2)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from acp_proxy.drive.turn import PromptTurn, drive_turn
from acp_proxy.live.client import Client, Services, initialize_params
from acp_proxy.log import get_logger
from acp_proxy.transcript.reading import read_records
from acp_proxy.transcript.records import FrameRecord
from tests.conftest import HERE, PROXY, clean_env

PROBE_AGENT = [sys.executable, str(HERE / "probe_agent.py")]


@pytest.fixture(scope="module", params=[1, 2], ids=["v1", "v2"])
def recorded(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A session of the good probe agent, recorded by the client core: initialize,
    session/new, and one prompt turn (a permission request in v1) to its end, end_turn."""
    protocol: int = request.param
    where = tmp_path_factory.mktemp(f"v{protocol}")
    path, sandbox = where / "session.jsonl", where / "sandbox"
    sandbox.mkdir()
    services = Services(sandbox, permissions="allow")
    with Client.start(PROBE_AGENT, services, get_logger(), record=str(path)) as client:
        assert client.call("initialize", initialize_params(protocol, services), 10).ok
        new = client.call("session/new", {"cwd": str(sandbox), "mcpServers": []}, 10)
        session = new.result["sessionId"]
        params = {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}
        prompt = PromptTurn(session, client.request("session/prompt", params))
        assert drive_turn(client, prompt, 30, lambda event: None).stop_reason == "end_turn"
    return path


def _seqs(path: Path) -> tuple[int, int]:
    """The recorded prompt's seq, and the seq of the frame that ended its turn (v1: the
    prompt's response; v2: the idle)."""
    frames = [(r.seq, r.frame.value) for r in read_records(path) if isinstance(r, FrameRecord)]
    prompt = next(seq for seq, v in frames if v.get("method") == "session/prompt")
    ends = [
        seq
        for seq, v in frames
        if seq > prompt
        and ("stopReason" in (v.get("result") or {})
             or (v.get("params") or {}).get("update", {}).get("state") == "idle")
    ]  # fmt: skip
    return prompt, ends[-1]


def _replay(recording: Path, *bug: str) -> Any:
    """``acp-proxy replay --as client --timeout 1 RECORDING -- probe_agent BUG``."""
    argv = [*PROXY, "replay", "--as", "client", "--timeout", "1", str(recording), "--"]
    return subprocess.run(
        [*argv, *PROBE_AGENT, *bug], capture_output=True, timeout=120, env=clean_env()
    )


def _divergences(stderr: bytes) -> list[str]:
    prefix = "acp-proxy replay: divergence: "
    lines = stderr.decode().splitlines()
    return [line.removeprefix(prefix) for line in lines if line.startswith(prefix)]


def test_the_agent_that_made_the_recording_ends_every_turn_as_recorded(recorded):
    proc = _replay(recorded)
    assert proc.returncode == 0, proc.stderr.decode()
    assert _divergences(proc.stderr) == []


def test_a_turn_that_does_not_end_within_the_timeout_is_named(recorded):
    """v1: the prompt is never answered (one chunk, then nothing); v2: it is answered, but
    no idle ever ends the turn. Nothing comes for --timeout: exit 1, the turn named first
    (its prompt's seq, how far it got, how it ended in the recording), then each recorded
    frame that never came."""
    v1 = recorded.parent.name.startswith("v1")
    proc = _replay(recorded, "endless" if v1 else "v2-no-idle")
    assert proc.returncode == 1, proc.stderr.decode()
    prompt, end = _seqs(recorded)
    how = (
        "its prompt was not answered"
        if v1
        else "its prompt was answered, but nothing ended the turn"
    )
    said = _divergences(proc.stderr)
    assert said[0] == (
        f"the turn of seq {prompt} (session/prompt) did not end: {how}, and nothing came for "
        f'1 s (recorded: it ended with stop reason "end_turn" at seq {end})'
    ), said
    assert f"seq {end} " in said[-1] and said[-1].endswith("never came (waited 1 s)"), said
    assert b"session/cancel" not in proc.stderr and b"Traceback" not in proc.stderr


def test_a_turn_that_ends_with_another_stop_reason_says_both(recorded):
    """The agent ends the turn max_tokens where the recording has end_turn: exit 1, the turn
    named with both ends (and, as for any frame, the path where the closing frame differs)."""
    proc = _replay(recorded, "stop", "max_tokens")
    assert proc.returncode == 1, proc.stderr.decode()
    prompt, end = _seqs(recorded)
    said = _divergences(proc.stderr)
    turn = [line for line in said if line.startswith("the turn of")]
    assert len(turn) == 1, said
    assert re.fullmatch(
        rf'the turn of seq {prompt} \(session/prompt\) ended with stop reason "max_tokens" '
        rf'\(live seq \d+\), recorded with stop reason "end_turn" \(seq {end}\)',
        turn[0],
    ), turn
    assert any(f"seq {end} (" in line and "stopReason" in line for line in said), said


def test_a_stop_reason_full_of_control_characters_is_said_escaped_on_its_line(recorded):
    """The stop reason is the agent's string: said JSON-quoted and escaped, the turn's line
    one line (no escape sequence, CR or line feed of the agent's reaches the terminal)."""
    if not recorded.parent.name.startswith("v1"):
        pytest.skip("the probe agent ends only v1 turns with that stop reason")
    proc = _replay(recorded, "bad-stop")
    assert proc.returncode == 1, proc.stderr.decode()
    turn = [line for line in _divergences(proc.stderr) if line.startswith("the turn of")]
    assert len(turn) == 1 and "FAKE: line" in turn[0], turn
    assert not {"\x1b", "\x07", "\r", "\u202e"} & set(proc.stderr.decode()), proc.stderr


def test_an_agent_that_keeps_sending_what_was_not_recorded_is_given_up_on(recorded):
    """A turn that streams chunks without end: each frame the recording does not have is a
    divergence, the first STRAYS_LISTED said one by one, the rest counted; at STRAYS_MAX
    the replay gives up, exit 1 (it ran on, its list growing, for as long as the agent
    sent)."""
    from acp_proxy.readers.replay import STRAYS_LISTED, STRAYS_MAX

    proc = _replay(recorded, "flood")
    assert proc.returncode == 1, proc.stderr.decode()[-2000:]
    said = _divergences(proc.stderr)
    strays = [line for line in said if line.startswith("the agent sent ")]
    assert len(strays) == STRAYS_LISTED, len(strays)
    assert (
        "more frames the recording does not have came: counted, not listed"
        in said[STRAYS_LISTED + said.index(strays[0])]
    )
    assert any(line.startswith(f"gave up after {STRAYS_MAX:,} frames") for line in said), said[-3:]
    assert len(said) < STRAYS_LISTED + 20


def test_replay_as_client_records_by_default_as_probe_and_chat_do(recorded, tmp_path):
    """Without --record the session played goes to the recordings directory (the same
    default as run, probe and chat), whole and ended; --no-record keeps nothing."""
    import os

    directory = Path(os.environ["XDG_STATE_HOME"]) / "acp-proxy" / "recordings"
    proc = _replay(recorded)
    assert proc.returncode == 0, proc.stderr.decode()
    made = sorted(directory.glob("*.jsonl"))
    assert len(made) == 1, made
    import orjson

    kinds = [orjson.loads(line)["kind"] for line in made[0].read_bytes().splitlines()]
    assert kinds[0] == "start" and kinds[-1] == "end" and "frame" in kinds
    argv = [*PROXY, "replay", "--as", "client", "--no-record", str(recorded), "--",
            *PROBE_AGENT]  # fmt: skip
    unrecorded = subprocess.run(argv, capture_output=True, timeout=120, env=clean_env())
    assert unrecorded.returncode == 0, unrecorded.stderr.decode()
    assert sorted(directory.glob("*.jsonl")) == made
