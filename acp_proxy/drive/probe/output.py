"""The probe's report: text (as it goes: :class:`TextStream`), JSON (the result's own
:meth:`~.outcome.ProbeResult.as_json`), JUnit (:func:`junit_cases`), and ``--list``.

The agent's strings are escaped (and its name quoted) wherever they appear, and come after
the counts, never where a count is read."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from acp_proxy.core.findings import Violation
from acp_proxy.core.visible import visible
from acp_proxy.drive.probe.catalog import FAIL, PASS, REGISTRY, SKIP, WARN
from acp_proxy.drive.probe.outcome import Outcome, ProbeResult, plural
from acp_proxy.drive.probe.runner import Amended, Listener
from acp_proxy.drive.words import ended_words

_COLOURS = {PASS: "green", FAIL: "red", WARN: "magenta", SKIP: "yellow"}


def _width() -> int:
    """The width of the name column: the longest check name."""
    return max(len(c.name) for c in REGISTRY)


def head_line(who: str, protocol: int) -> str:
    return f"acp-proxy probe: {who}, protocol {protocol}"


def outcome_lines(
    outcome: Outcome, style: Callable[[str, str], str], recording: Path | None
) -> list[str]:
    """A check's lines: its status, name and reason, a line per finding (grouped by rule),
    its notes, and for a failure or a warning where to look."""
    status = style(f"{outcome.status:<4}", _COLOURS[outcome.status])
    reason = outcome.reason
    if outcome.needed:
        reason += " (not asked for: run for the checks asked for)"
    lines = [f"  {status}  {outcome.check.name:<{_width()}}  {reason}"]
    lines += _detail_lines(outcome, outcome.findings, recording)
    return lines


def _pad() -> str:
    return f"  {'':4}  {'':<{_width()}}    "


def _detail_lines(
    outcome: Outcome, findings: list[Violation], recording: Path | None, late: bool = False
) -> list[str]:
    pad = _pad()
    lines = []
    if outcome.status == WARN and not late:
        lines.append(f"{pad}basis: {outcome.check.basis} ({outcome.check.level})")
    for finding, count in _grouped(findings):
        times = f" x{count}, first" if count > 1 else ""
        lines.append(
            f"{pad}{finding.level} {finding.rule} "
            f"({times.lstrip(', ')}{' ' if times else ''}seq {finding.seq}): "
            f"{visible(finding.message)}"
        )
    if late:
        return lines
    passed = outcome.status == PASS  # (what the probe provoked, there as it should be)
    for finding, count in [] if passed else _grouped(outcome.own):
        times = f"x{count}, first " if count > 1 else ""
        lines.append(
            f"{pad}provoked by the probe: {finding.level} {finding.rule} ({times}seq "
            f"{finding.seq}), not the agent's"
        )
    for note in outcome.notes:
        if not (passed and note in outcome.own_notes):
            lines.append(f"{pad}note: {note}")
    for where in outcome.where(recording):
        lines.append(f"{pad}see: {visible(where)}")
    return lines


def amended_lines(
    amended: Amended, style: Callable[[str, str], str], recording: Path | None
) -> list[str]:
    """A check told of already, with findings since (the end's, a transport's): only what
    is new, once; its status again only if they changed it."""
    outcome = amended.outcome
    name = f"{outcome.check.name:<{_width()}}"
    if outcome.status != amended.was:
        status = style(f"{outcome.status:<4}", _COLOURS[outcome.status])
        head = f"  {status}  {name}  {outcome.reason} (found after the check ended)"
        tail = [f"{_pad()}see: {visible(where)}" for where in outcome.where(recording)]
    else:
        head = f"  {'':4}  {name}  found after the check ended:"
        tail = []
    return [head, *_detail_lines(outcome, amended.findings, recording, late=True), *tail]


def summary_line(result: ProbeResult) -> str:
    """The counts first, the agent's name (quoted) after them."""
    counts = result.counts()
    warned = f", {plural(counts[WARN], 'warning')}" if counts[WARN] else ""
    strict = " (--strict: warnings fail)" if result.strict and counts[WARN] else ""
    return (
        f"{plural(len(result.outcomes), 'check')}: {counts[PASS]} passed, {counts[FAIL]} "
        f"failed{warned}, {counts[SKIP]} skipped{strict}; {result.who} "
        f"{ended_words(result.returncode)}"
    )


def tail_lines(result: ProbeResult) -> list[str]:
    """The summary, and where the recording is."""
    lines = [summary_line(result)]
    if result.recording is not None:
        lines.append(f"recording: {visible(str(result.recording))}")
    return lines


def text_lines(result: ProbeResult, style: Callable[[str, str], str]) -> list[str]:
    """The report, whole: the agent, a check's lines each (:func:`outcome_lines`), the
    summary. ``style(text, colour)`` colours a word (or leaves it)."""
    lines = [head_line(result.who, result.protocol)]
    for outcome in result.outcomes:
        lines += outcome_lines(outcome, style, result.recording)
    return lines + tail_lines(result)


class TextStream(Listener):
    """The text report as the probe goes: the agent's line after the handshake, each
    check's lines as it ends, what a check got after it ended, once, at the end
    (:func:`tail_lines` follows, from the result)."""

    def __init__(
        self,
        emit: Callable[[str], None],
        style: Callable[[str, str], str],
        status: Callable[[str], None] | None = None,
    ) -> None:
        self.emit, self.style = emit, style
        #: Where the check running now is said, on one line rewritten ("" clears it): a
        #: terminal's, while a check waits (None: not said).
        self.status = status
        self.shown = False
        self.headed = False

    def began(self, who: str, protocol: int) -> None:
        self._clear()
        self.headed = True
        self.emit(head_line(who, protocol))

    def running(self, name: str) -> None:
        if self.status is not None:
            self.status(f"  ....  {name:<{_width()}}  running")
            self.shown = True

    def _clear(self) -> None:
        if self.status is not None and self.shown:
            self.status("")
            self.shown = False

    def ended(self, outcome: Outcome) -> None:
        self._lines(outcome_lines(outcome, self.style, self.recording))

    def amended(self, amended: Amended) -> None:
        self._lines(amended_lines(amended, self.style, self.recording))

    def _lines(self, lines: list[str]) -> None:
        self._clear()
        for line in lines:
            self.emit(line)


def _grouped(findings: list[Violation]) -> list[tuple[Violation, int]]:
    """Findings of one rule and level together: the first, and how many."""
    groups: dict[tuple[str, str], list[Violation]] = {}
    for finding in findings:
        groups.setdefault((finding.rule, finding.level), []).append(finding)
    return [(group[0], len(group)) for group in groups.values()]


def junit_cases(result: ProbeResult) -> list[tuple[str, str, str, str]]:
    """(name, status, message, detail) per check, for
    :func:`~acp_proxy.readers.ci.junit_checks`: a warning is ``warn`` (a passing case with
    a note), or ``fail`` under ``--strict``."""
    cases = []
    for outcome in result.outcomes:
        status = FAIL if outcome.status == WARN and result.strict else outcome.status
        detail = "\n".join(
            [outcome.reason, f"spec: {outcome.check.spec} ({outcome.link})"]
            + ([f"basis ({outcome.check.level}): {outcome.check.basis}"]
               if outcome.status == WARN else [])
            + [f"{f.level} {f.rule} (seq {f.seq}): {f.message}" for f in outcome.findings]
            + [f"provoked by the probe: {f.level} {f.rule} (seq {f.seq})" for f in outcome.own]
            + [f"note: {note}" for note in outcome.notes]
            + [f"see: {where}" for where in outcome.where(result.recording)]
            + ([f"recording: {result.recording}"] if result.recording else [])
        )  # fmt: skip
        cases.append((outcome.check.name, status, outcome.reason, detail))
    return cases


def list_lines() -> list[str]:
    """``probe --list``: each check, its level (MUST: a failure; SHOULD: a warning), what
    it checks, and the spec page it comes from (its basis and needs: ``--format json``)."""
    width = _width()
    return [f"{c.name:<{width}}  {c.level:<6}  {c.what} ({c.spec})" for c in REGISTRY]


def list_json() -> list[dict[str, Any]]:
    """``probe --list --format json``: an object per check."""
    return [c.as_json() for c in REGISTRY]


def cannot_run_json(argv: list[str], why: str) -> dict[str, Any]:
    """``--format json`` of a probe that could not run (exit 2): a document like a run's,
    with no check, that says why."""
    return {
        "agent": argv,
        "name": None,
        "version": None,
        "protocol": None,
        "checks": [],
        "summary": {PASS: 0, FAIL: 0, WARN: 0, SKIP: 0},
        "recording": None,
        "ended": "",
        "error": visible(why),
    }


def cannot_run_junit(why: str) -> str:
    """``--format junit`` of a probe that could not run (exit 2): one test case, in error,
    that says why (a CI job's report says it, not an empty file)."""
    suite, said = quoteattr("acp-proxy probe"), visible(why)  # (no control reaches the XML)
    counts = 'tests="1" failures="0" errors="1"'
    return "\n".join([
        '<?xml version="1.0" encoding="UTF-8"?>',
        f"<testsuites name={suite} {counts}>",
        f'  <testsuite name={suite} {counts} skipped="0">',
        f'    <testcase classname={suite} name="probe">',
        f'      <error message={quoteattr(said)} type="cannot-run">{escape(said)}</error>',
        "    </testcase>",
        "  </testsuite>",
        "</testsuites>",
    ])  # fmt: skip
