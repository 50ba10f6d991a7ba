"""``test-agent``: acp-proxy plays the AGENT on its own stdio, to check a client.

A client (an editor, a plugin, a headless client) starts ``acp-proxy test-agent`` as its agent
command. Each prompt runs one scripted turn that exercises what a client must handle (every
stable ``session/update`` variant, an unknown one and ``_meta``, a 1 MB chunk, a permission
request, the client's ``fs`` and ``terminal`` methods where it advertised them, a custom
``_`` request) and checks what the client sends back; the turn ends with a message that tells
the user, in the editor, what passed and failed.

Two parts, as everywhere in acp-proxy:

- :class:`TestAgent` (:mod:`.machine`, on :mod:`.scenario` and :mod:`.core`), the
  scenario as a state machine, pure: a client message in
  (:meth:`TestAgent.receive`, with the time), the agent's lines out, and checks
  (:class:`Check`, each check's code in :mod:`.checks`, registered in :mod:`.catalog` with
  its basis and level) kept; a wait on the client has a deadline (:attr:`TestAgent.deadline`),
  and :meth:`TestAgent.expire` says it ran out. No I/O, no clock of its own.
- :func:`serve` (:mod:`.shell`), the thin shell: the machine as the role of the server
  (:class:`~acp_proxy.live.server.Server`: our stdio relayed as ``run`` relays, with its
  bounds and back-pressure; ``drive`` leaves the event loop to ``live``), every frame of both
  sides observed as ``run`` observes it (the client is ``Side.CLIENT``, what test-agent writes
  ``Side.AGENT``), the validator's findings on the client's frames handed to the machine.
  stdout carries nothing but the JSON-RPC lines; a write the client does not read within the
  bound is a failed check.

Safe by construction: a path it names is inside the session's cwd (or it is not named), it
writes (``fs/write_text_file``) only with ``allow_write``, and the only command it asks a
terminal to run is ``echo``. It checks effects, not answers: a written file is read back,
an echo's output must hold the word it printed.

Modules::

    catalog.py   Spec, check (the decorator), Check, Options, the levels and statuses
    checks.py    the checks, one function each: a judge of what the client sent back
    core.py      Core: the machine's state, its lines out, the requests a turn waits on
    scenario.py  Scenario: a turn's steps (v1, v2), its summary for the user
    machine.py   TestAgent: the dispatch of the client's messages
    report.py    Report: the summary line, text, JSON, JUnit
    shell.py     serve: the machine as the server role, the findings handed to it
"""

from __future__ import annotations

from acp_proxy.drive.test_agent.catalog import (
    LARGE_CHUNK,
    MISSING_NAME,
    REGISTRY,
    WRITTEN_NAME,
    Check,
    Options,
    named_file,
)
from acp_proxy.drive.test_agent.machine import TestAgent
from acp_proxy.drive.test_agent.report import Report
from acp_proxy.drive.test_agent.shell import MAX_FINDINGS, Findings, serve

__all__ = [
    "LARGE_CHUNK",
    "MAX_FINDINGS",
    "MISSING_NAME",
    "REGISTRY",
    "WRITTEN_NAME",
    "Check",
    "Findings",
    "Options",
    "Report",
    "TestAgent",
    "named_file",
    "serve",
]
