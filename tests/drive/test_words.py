"""What probe and chat say of an agent (:mod:`acp_proxy.drive.words`), and probe's report
built from a result (:func:`acp_proxy.drive.probe.text_lines`): English sentences, the
agent's strings escaped and cut so that what matters survives."""

from __future__ import annotations

import signal

import pytest

from acp_proxy.core.protocol import agent_capabilities as capabilities
from acp_proxy.core.protocol import agent_info
from acp_proxy.drive.probe import CHECKS, FAIL, SKIP, Outcome, ProbeResult, text_lines
from acp_proxy.drive.words import (
    LINE,
    SHOWN,
    command_words,
    ended_words,
    gone_words,
    shown,
    shown_line,
)
from acp_proxy.live.client import AgentGone

#: A crash's last line, longer than a short field: its start and its end both matter.
TRACEBACK_END = (
    "ModuleNotFoundError: No module named 'agent_sdk' "
    + "x" * 400
    + " (did you run pip install agent-sdk?)"
)


def test_a_long_stderr_line_is_cut_in_the_middle_so_its_start_and_end_show():
    line = shown_line(TRACEBACK_END)
    assert len(line) == LINE and "…" in line
    assert line.startswith("ModuleNotFoundError: No module named 'agent_sdk'")
    assert line.endswith("(did you run pip install agent-sdk?)")
    assert shown_line("short \x1b[31mred") == "short \\x1b[31mred"


def test_a_short_field_is_cut_short_at_its_end():
    assert len(shown("v" * 500)) == SHOWN and shown("v" * 500).endswith("…")
    assert shown("sess_1\u202e") == "sess_1\\u202e"


def test_an_agent_gone_keeps_its_stderrs_last_lines_fuller_and_escaped():
    words = gone_words(AgentGone(3, ["Traceback (most recent call last):", TRACEBACK_END]))
    assert words.startswith("the agent exited with status 3; its stderr ended: Traceback")
    assert "No module named 'agent_sdk'" in words
    assert words.endswith("(did you run pip install agent-sdk?)")
    assert "\x1b" not in gone_words(AgentGone(1, ["\x1b]52;c;aGk=\x07"]))
    assert gone_words(AgentGone(None, [])) == "the agent closed its output"


@pytest.mark.parametrize(
    ("returncode", "words"),
    [
        (0, "exited with status 0"),
        (3, "exited with status 3"),
        (-signal.SIGTERM, "ended (killed by SIGTERM)"),
        (None, "is still running"),
    ],
)
def test_how_an_agent_ended_reads_as_english(returncode, words):
    assert ended_words(returncode) == words
    assert " with killed" not in f"the agent {ended_words(returncode)}"


def test_the_command_is_escaped_quoted_and_cut_in_the_middle():
    assert command_words(["false"]) == "false"
    assert command_words(["sh", "-c", "echo hi; exec cat"]) == "sh -c 'echo hi; exec cat'"
    long = command_words(["/opt/agents/bin/python", "-m", "a" * 200, "--acp\x1b"])
    assert len(long) == SHOWN and long.startswith("/opt/agents/bin/python -m a")
    assert long.endswith("--acp\\x1b'")


def test_what_the_agent_said_it_is_by_protocol():
    v1 = {"agentInfo": {"name": "a", "version": 2}, "agentCapabilities": {"loadSession": True}}
    v2 = {"info": {"name": "b", "version": "1.0"}, "capabilities": []}
    assert agent_info(v1, 1) == ("a", None) and agent_info(v1, 2) == (None, None)
    assert agent_info(v2, 2) == ("b", "1.0")
    assert capabilities(v1, 1) == {"loadSession": True} and capabilities(v2, 2) == {}


def _result(**kwargs: object) -> ProbeResult:
    outcome = Outcome(CHECKS[0], FAIL, "the agent exited with status 1")
    skipped = Outcome(CHECKS[-1], SKIP, "the agent wrote nothing on stdout")
    fields: dict[str, object] = {"argv": ["false"], "protocol": 1, "recording": None}
    return ProbeResult(outcomes=[outcome, skipped], **{**fields, **kwargs})  # type: ignore[arg-type]


def test_probes_report_names_the_command_of_an_agent_that_gave_no_name():
    lines = text_lines(_result(ended="exit status 1", returncode=1), lambda text, _: text)
    assert lines[0] == "acp-proxy probe: false, protocol 1"
    assert lines[-1] == "2 checks: 0 passed, 1 failed, 1 skipped; false exited with status 1"


def test_probes_report_names_the_agent_and_how_a_signal_ended_it():
    result = _result(name="my-agent", version="0.3", returncode=-signal.SIGTERM)
    lines = text_lines(result, lambda text, _: text)
    assert lines[0] == 'acp-proxy probe: "my-agent 0.3", protocol 1'
    assert lines[-1].endswith('; "my-agent 0.3" ended (killed by SIGTERM)')


def test_a_name_made_of_report_syntax_stays_quoted_after_the_counts():
    """An agent named like the summary cannot put a count where the counts are read."""
    result = _result(name='0 failed"\n3 checks: 3 passed', version="\x1b[2J", returncode=0)
    lines = text_lines(result, lambda text, _: text)
    assert lines[-1].startswith("2 checks: 0 passed, 1 failed, 1 skipped; ")
    name = '"0 failed\\"\\x0a3 checks: 3 passed \\x1b[2J"'
    assert lines[-1].endswith(f"; {name} exited with status 0")
    assert lines[0] == f"acp-proxy probe: {name}, protocol 1"
    assert all("\n" not in line and "\x1b" not in line for line in lines)
