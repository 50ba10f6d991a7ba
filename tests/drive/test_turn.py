"""A prompt turn driven to its end as the wire model says (drive/turn.py), over the client
core and a real agent (tests/probe_agent.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from acp_proxy.drive.turn import Overdue, PromptTurn, drive_turn
from acp_proxy.live.client import Client, Event, Services, initialize_params
from acp_proxy.log import get_logger
from tests.conftest import HERE

PROBE_AGENT = [sys.executable, str(HERE / "probe_agent.py")]


def _session(tmp_path: Path, protocol: int, *bug: str) -> tuple[Client, str]:
    sandbox = tmp_path / "sandbox"
    sandbox.mkdir(exist_ok=True)
    services = Services(sandbox, permissions="allow")
    client = Client.start([*PROBE_AGENT, *bug], services, get_logger(), no_record=True)
    reply = client.call("initialize", initialize_params(protocol, services), 10)
    assert reply.ok, reply.value
    new = client.call("session/new", {"cwd": str(sandbox), "mcpServers": []}, 10)
    return client, new.result["sessionId"]


def _prompt(client: Client, session: str) -> PromptTurn:
    params = {"sessionId": session, "prompt": [{"type": "text", "text": "hi"}]}
    return PromptTurn(session, client.request("session/prompt", params))


@pytest.mark.parametrize("protocol", [1, 2])
def test_a_turn_ends_with_its_closing_frame_and_stop_reason(tmp_path, protocol):
    client, session = _session(tmp_path, protocol)
    with client:
        taken: list[Event] = []
        turn = drive_turn(client, _prompt(client, session), 10, taken.append)
        assert turn.ended and turn.answered and not turn.failed
        assert turn.stop_reason == "end_turn" and turn.error is None
        assert turn.closer is not None and turn.closer in taken and turn.reply in taken
        # v1: the response closes the turn; v2: the idle state_update does
        closing = turn.closer.value
        if protocol == 1:
            assert turn.closer is turn.reply
        else:
            assert closing["params"]["update"]["state"] == "idle"
        assert turn.wire is not None and turn.wire.ended


@pytest.mark.parametrize("protocol", [1, 2])
def test_a_turn_cancelled_once_under_way_ends_cancelled(tmp_path, protocol):
    client, session = _session(tmp_path, protocol, "slow-stream")
    with client:
        cancels: list[int] = []
        turn = drive_turn(client, _prompt(client, session), 20, lambda e: None,
                          cancel=lambda: cancels.append(client.seq))  # fmt: skip
        assert len(cancels) == 1
        assert turn.ended and turn.stop_reason == "cancelled"


def test_a_turn_past_its_bound_is_cancelled_and_overdue(tmp_path):
    client, session = _session(tmp_path, 1, "endless")
    with client:
        turn = _prompt(client, session)
        with pytest.raises(Overdue) as raised:
            drive_turn(client, turn, 0.5, lambda e: None)
        assert raised.value.turn is turn and not turn.ended


def test_an_error_answer_is_the_turns_error(tmp_path):
    client, session = _session(tmp_path, 1, "error-prompt")
    with client:
        turn = drive_turn(client, _prompt(client, session), 10, lambda e: None)
        assert turn.ended and turn.failed and isinstance(turn.error, dict)
        assert turn.error_words().startswith(f"error {turn.error['code']}: ")
