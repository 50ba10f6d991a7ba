"""How a check ended (:class:`Outcome`), a probe's run (:class:`ProbeResult`), and the
validator's findings given to the checks they happened in (:func:`attribute`)."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from acp_proxy.core.findings import Violation
from acp_proxy.core.protocol import STOP_REASONS
from acp_proxy.core.visible import dumps, visible
from acp_proxy.drive.probe.catalog import FAIL, PASS, SKIP, WARN, Check
from acp_proxy.drive.words import command_words, shown

#: Rules whose findings count against a check of their own, whenever they happen.
TRANSPORT_RULES = frozenset(
    {"not-json", "not-utf8", "crlf-line-ending", "blank-line", "invalid-message", "jsonrpc-version"}
)


@dataclass
class Outcome:
    """How one check ended."""

    check: Check
    status: str
    reason: str
    #: The frames it spans (seq, first and last), if it sent or saw any.
    seqs: tuple[int, int] | None = None
    findings: list[Violation] = field(default_factory=list)
    #: What the probe did or refused during it that is no fault of the agent's (a file
    #: outside the sandbox refused, a new session for a turn), escaped.
    notes: list[str] = field(default_factory=list)
    #: Those of :attr:`notes` that say what the probe's own malformed requests were (the
    #: text leaves them out under a pass: the JSON and the recording keep them).
    own_notes: list[str] = field(default_factory=list)
    #: The frame to look at for a failure or a warning (its seq), and the rule it broke,
    #: when known.
    seq: int | None = None
    rule: str | None = None
    #: Not asked for: it ran for the checks asked for (``--only``), and failed.
    needed: bool = False
    #: Findings the probe provoked (at its own deliberately malformed requests and the
    #: agent's answers to them): the probe's doing, kept apart, failing nothing.
    own: list[Violation] = field(default_factory=list)
    #: The protocol version spoken (for the spec page's link).
    protocol: int = 1

    @property
    def link(self) -> str:
        return self.check.link(self.protocol)

    def where(self, recording: Path | None) -> list[str]:
        """For a failure or a warning: where to look, as commands (the frame, the rule) and
        the spec page; nothing for a check that passed or skipped."""
        if self.status not in (FAIL, WARN):
            return []
        said = []
        if self.seq is not None and recording is not None:
            said.append(f"acp-proxy show --seq {self.seq} {shlex.quote(str(recording))}")
        elif self.seq is not None:
            said.append(f"seq {self.seq} (not recorded: --no-record)")
        if self.rule is not None:
            said.append(f"acp-proxy rules {self.rule}")
        said.append(self.link)
        return said

    def as_json(self, recording: Path | None = None) -> dict[str, Any]:
        return {
            "check": self.check.name,
            "status": self.status,
            "reason": self.reason,
            "spec": self.check.spec,
            "basis": self.check.basis,
            "level": self.check.level,
            "link": self.link,
            "seqs": list(self.seqs) if self.seqs else None,
            "seq": self.seq,
            "rule": self.rule,
            "see": self.where(recording),
            "needed": self.needed,
            "findings": [{**f.as_dict(), "seq": f.seq} for f in self.findings],
            "own_findings": [{**f.as_dict(), "seq": f.seq} for f in self.own],
            "notes": self.notes,
        }


@dataclass
class ProbeResult:
    """A probe's run: the agent, what it said it is, the checks' outcomes, the recording."""

    argv: list[str]
    protocol: int
    outcomes: list[Outcome]
    recording: Path | None
    name: str | None = None
    version: str | None = None
    #: The agent's exit status at the end, in words (``exit status 0``), and as a number
    #: (negative: the signal that ended it; None: it did not end).
    ended: str = ""
    returncode: int | None = None
    #: Warnings fail (``--strict``).
    strict: bool = False

    @property
    def who(self) -> str:
        return who_words((self.name, self.version), self.argv)

    @property
    def failed(self) -> bool:
        """Whether a check failed (or, ``--strict``, warned): exit status 1."""
        bad = (FAIL, WARN) if self.strict else (FAIL,)
        return any(o.status in bad for o in self.outcomes)

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for o in self.outcomes if o.status == s) for s in (PASS, FAIL, WARN, SKIP)}

    def as_json(self) -> dict[str, Any]:
        return {
            "agent": self.argv,
            "name": self.name,
            "version": self.version,
            "protocol": self.protocol,
            "checks": [o.as_json(self.recording) for o in self.outcomes],
            "summary": self.counts(),
            "strict": self.strict,
            "recording": str(self.recording) if self.recording else None,
            "ended": self.ended,
        }


def attribute(
    outcomes: list[Outcome], findings: Sequence[Violation], own: Mapping[int, str] | None = None
) -> None:
    """Each finding (warning or error) to its check; an error fails a check that passed or
    warned, or one that skipped after its traffic began (the cancel check of a turn that
    ended before the cancel: what the agent got wrong in it is wrong, whether the cancel
    crossed or not). A finding at a frame of ``own`` (what the probe provoked: its
    deliberately malformed requests, the agent's answers to them) is the probe's: kept apart
    on its check, failing nothing."""
    by_name = {o.check.name: o for o in outcomes}
    spanned = [o for o in outcomes if o.seqs is not None]
    for finding in findings:
        if finding.level == "info":
            continue
        target: Outcome | None = None
        if finding.rule in TRANSPORT_RULES:
            target = by_name.get("stdout")
        elif finding.rule.startswith("permission-"):
            target = by_name.get("permission")
        if target is None and finding.seq is not None:
            target = next((o for o in spanned if within(o, finding.seq)), None)
        if target is None:
            target = spanned[-1] if spanned else (outcomes[-1] if outcomes else None)
        if target is None:
            continue
        if own and finding.seq in own:
            target.own.append(finding)
            continue
        target.findings.append(finding)
        if target.status == FAIL and target.rule is None and finding.level == "error":
            target.rule = finding.rule  # (a failure of its own, and a rule broken in it)
        ran = target.status == SKIP and target.seqs is not None
        if finding.level == "error" and (target.status in (PASS, WARN) or ran):
            target.status = FAIL
            target.reason = f"{finding.rule} at seq {finding.seq}: {visible(finding.message)}"
            target.seq, target.rule = finding.seq, finding.rule


def annotate(outcomes: list[Outcome], notes: Sequence[tuple[int, str, bool]]) -> None:
    """Each note to the check during whose frames it came (else the last that had any):
    said, failing nothing (one that says what the probe provoked, also among its
    :attr:`~Outcome.own_notes`)."""
    spanned = [o for o in outcomes if o.seqs is not None]
    for seq, line, provoked in notes:
        target = next((o for o in spanned if within(o, seq)), spanned[-1] if spanned else None)
        if target is not None:
            target.notes.append(line)
            if provoked:
                target.own_notes.append(line)


def who_words(info: tuple[str | None, str | None], argv: Sequence[str]) -> str:
    """The agent, for a person: the name and version it gave, escaped in double quotes
    (the agent's words, never read as the report's), else the command the user gave."""
    named = " ".join(part for part in info if part)
    return quoted(named) if named else command_words(argv)


def quoted(text: str) -> str:
    """A string of the peer's in double quotes, escaped: its quotes and backslashes too, so
    that nothing in it can end the quotes or pass for an escape."""
    return '"' + shown(text.replace("\\", "\\\\").replace('"', '\\"')) + '"'


def within(outcome: Outcome, seq: int) -> bool:
    return outcome.seqs is not None and outcome.seqs[0] <= seq <= outcome.seqs[1]


def wire(value: Any) -> str:
    """A value of the agent's in a sentence: a string escaped in double quotes, else its
    JSON (never a Python repr)."""
    if isinstance(value, str):
        return quoted(value)
    return shown(dumps(value).decode())


def stop_words(stop: Any) -> str:
    """A stop reason: one of ACP's as it is, else quoted (:func:`wire`)."""
    return stop if isinstance(stop, str) and stop in STOP_REASONS else wire(stop)


def plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"
