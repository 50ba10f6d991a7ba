"""What test-agent found (:class:`Report`), in each format: the one summary line on stderr
(its counts first), text, JSON, JUnit. The client's strings (its name, what it answered)
are quoted and escaped in each, never where a count is read."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from acp_proxy.core.findings import Violation
from acp_proxy.core.visible import visible
from acp_proxy.drive.test_agent.catalog import FAIL, PASS, REGISTRY, SKIP, STATUSES, WARN, Check
from acp_proxy.readers.ci import junit_checks

#: The suite's name in JUnit.
SUITE = "acp-proxy test-agent"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def quoted(value: Any) -> str:
    """A string of the client's as a JSON string: quoted, newlines and quotes escaped."""
    return visible(orjson.dumps(str(value)[:200]).decode())


@dataclass(frozen=True, slots=True)
class Report:
    """What test-agent found: the client, the checks, the validator's findings."""

    version: int | None
    client: Any
    turns: int
    checks: list[Check]
    findings: list[Violation]
    recording: str | None = None
    #: Why the session ended.
    reason: str = ""
    #: Warnings fail (``--strict``).
    strict: bool = False

    def counts(self) -> dict[str, int]:
        return {s: sum(c.status == s for c in self.checks) for s in STATUSES}

    @property
    def failed(self) -> int:
        """The checks that fail the run: failures, and warnings under ``--strict``."""
        counts = self.counts()
        return counts[FAIL] + (counts[WARN] if self.strict else 0)

    def client_words(self) -> str:
        info = self.client if isinstance(self.client, dict) else {}
        said = " ".join(str(info.get(key)) for key in ("name", "version") if info.get(key))
        return f"client {quoted(said)}" if said else "a client that did not say its name"

    def summary(self) -> str:
        """The one line on stderr, counts first: ``N failed, M passed, K skipped ...``."""
        counts = self.counts()
        warned = f", {_plural(counts[WARN], 'warning')}" if counts[WARN] else ""
        strict = " (--strict: warnings fail)" if self.strict and counts[WARN] else ""
        version = f"ACP v{self.version}" if self.version else "never initialized"
        return (
            f"{counts[FAIL]} failed, {counts[PASS]} passed, {counts[SKIP]} skipped{warned}"
            f"{strict}; {_plural(self.turns, 'turn')} of {self.client_words()} ({version})"
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "client": self.client,
            "protocol": self.version,
            "turns": self.turns,
            "counts": self.counts(),
            "strict": self.strict,
            "checks": [check.as_json() for check in self.checks],
            "findings": [{**f.as_dict(), "seq": f.seq} for f in self.findings],
            "catalog": [spec.as_json() for spec in REGISTRY.values()],
            "recording": self.recording,
            "ended": self.reason,
        }

    def text_lines(self) -> Iterator[str]:
        """The summary, a line per check (its level for a failure or a warning), the
        validator's findings that are no ``valid-frames`` failure already (an error on a frame
        another check failed on is that check's: listed here, once)."""
        yield f"acp-proxy test-agent: {self.summary()}"
        for check in self.checks:
            turn = f"turn {check.turn}" if check.turn is not None else "connection"
            at = f" (seq {check.seq})" if check.seq is not None else ""
            rule = check.rule or check.basis
            level = f" {check.level}" if check.status in (FAIL, WARN) else ""
            head = f"{check.status:<4}  {check.name:<20}  {turn:<10}"
            yield f"{head}  {check.why}{at}{level} [{rule}]"
        listed = {c.seq for c in self.checks if c.name == "valid-frames" and c.status == FAIL}
        for finding in self.findings:
            if finding.level != "error" or finding.seq not in listed:
                where = f"{finding.level}  {finding.rule}  seq {finding.seq}"
                yield f"finding  {where}: {finding.message}"
        if self.recording:
            yield f"recording: {self.recording}"
        if self.reason:
            yield f"ended: {self.reason}"

    def junit(self) -> str:
        """A test case per check (named by turn and check): a warning is a passing case
        with a ``warning`` property, or a failure under ``--strict``."""
        cases = []
        for check in self.checks:
            where = f"turn {check.turn}" if check.turn is not None else "connection"
            status = FAIL if check.status == WARN and self.strict else check.status
            detail = "\n".join(
                [check.why, f"basis ({check.level}): {check.rule or check.basis}"]
                + ([f"seq: {check.seq}"] if check.seq is not None else [])
                + [self.client_words()]
                + ([f"recording: {self.recording}"] if self.recording else [])
            )
            cases.append((f"{where}: {check.name}", status, check.why, detail))
        return junit_checks(SUITE, cases) + "\n"
