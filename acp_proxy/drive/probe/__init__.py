"""``acp-proxy probe``: an agent checked without an editor, in one command.

acp-proxy plays the client (:class:`~acp_proxy.live.client.Client`: the agent started,
relayed, validated and recorded as ``run`` does) and runs the checks of :data:`CHECKS` in
their order. Each check is one function of :mod:`.checks`, registered by
:func:`~.catalog.check` with its name, its basis (the sentence, with its MUST or SHOULD, or
the peer suite it follows), its level, what it needs and its code; the catalog (``--list``)
and the run order are the registrations'. Each ends ``pass``, ``fail`` (a MUST broken: why,
and the findings it caused), ``warn`` (a SHOULD, a suggested code, a peer suite's stricter
rule: said, failing nothing unless ``--strict``) or ``skip`` (why: not advertised, not asked
for, what it needs failed first, or nothing to check).

- Every validator finding at error level fails the check during whose frames it happened
  (a check knows the ``seq`` range it spans); a line on stdout that is not a message (the
  transport's findings) counts against ``stdout``, a permission rule against
  ``permission``. Warnings are listed with their check and fail nothing.
- Every wait has a bound (``timeout``, per step: a response, or a whole turn); an agent that
  hangs, crashes or exits fails the check it was in, with its exit status and the last lines
  of its stderr, and the checks after it are skipped. Fail fast: a check whose need failed,
  and every prompt once the first prompt turn failed, is skipped with a reason naming it.
- What the probe provokes (its deliberately malformed requests, the agent's answers to them)
  is marked in its recording and is the probe's doing, never the agent's error.
- Safe by default: the services answer ``fs`` only inside a scratch directory, permission
  requests by the policy, and run no command unless ``allow_terminal``.

Free of asyncio: the client core's blocking calls do the waiting.

Modules::

    catalog.py  Check, check (the decorator), Options, the levels and statuses
    checks.py   the checks, one function each, in the order they run
    runner.py   Probe, probe: the run, fail fast, what the checks share, provoked frames
    outcome.py  Outcome, ProbeResult, attribute: how a check ended, findings to checks
    output.py   text (as it goes), JUnit cases, --list
"""

from __future__ import annotations

from acp_proxy.drive.probe import checks as _checks  # noqa: F401 - registers the checks
from acp_proxy.drive.probe.catalog import (
    DEFAULT_PROMPT,
    FAIL,
    MUST,
    PASS,
    REGISTRY,
    SHOULD,
    SKIP,
    WARN,
    Check,
    Options,
    check,
)
from acp_proxy.drive.probe.outcome import Outcome, ProbeResult, attribute
from acp_proxy.drive.probe.output import (
    TextStream,
    cannot_run_json,
    cannot_run_junit,
    head_line,
    junit_cases,
    list_json,
    list_lines,
    tail_lines,
    text_lines,
)
from acp_proxy.drive.probe.runner import Listener, probe

#: The checks, in the order they run.
CHECKS = tuple(REGISTRY)
CHECK_NAMES = tuple(c.name for c in CHECKS)

__all__ = [
    "CHECKS",
    "CHECK_NAMES",
    "DEFAULT_PROMPT",
    "FAIL",
    "MUST",
    "PASS",
    "SHOULD",
    "SKIP",
    "WARN",
    "Check",
    "Listener",
    "Options",
    "Outcome",
    "ProbeResult",
    "TextStream",
    "attribute",
    "cannot_run_json",
    "cannot_run_junit",
    "check",
    "head_line",
    "junit_cases",
    "list_json",
    "list_lines",
    "probe",
    "tail_lines",
    "text_lines",
]
