"""Findings as CI servers read them: JUnit XML (GitHub, GitLab and Jenkins show test cases) and
SARIF 2.1.0 (code scanning: a result per finding, the rule's help from the catalog, the
recording and line as the location). Pure: results in, text out.

JUnit: a test suite per recording, a test case per rule that found an error there, at most one
failure per case (consumers reject more), and counts that add up (``tests`` counts the cases,
``failures`` and ``errors`` the cases that failed or could not run). Whatever a recording holds
reaches the XML as characters XML 1.0 can hold; a SARIF location is a percent-encoded URI."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote
from xml.sax.saxutils import escape, quoteattr

from acp_proxy.core.findings import Violation
from acp_proxy.core.rules import RULES
from acp_proxy.core.version import VERSION
from acp_proxy.core.visible import dumps, visible
from acp_proxy.transcript.reading import STDIN_NAME

__all__ = ["Checked", "junit", "junit_checks", "junit_divergences", "sarif"]

#: SARIF's level for each of ours.
_SARIF_LEVELS = {"error": "error", "warning": "warning", "info": "note"}


@dataclass
class Checked:
    """One recording, validated: its findings with their lines, or why it could not be read."""

    path: str
    findings: list[tuple[int, Violation]] = field(default_factory=list)
    unreadable: str | None = None

    @property
    def name(self) -> str:
        """The recording as ``PATH:LINE`` names it: ``-`` is ``(standard input)``."""
        return STDIN_NAME if self.path == "-" else self.path


#: What XML 1.0 cannot hold, even escaped (after :func:`visible`: U+FFFE, U+FFFF, surrogates).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml(value: str, lines: bool = False) -> str:
    """A string XML can hold: controls made visible, and what XML 1.0 has no place for as
    ``\\uXXXX`` (parsers reject a document with U+FFFF in it)."""
    text = visible(value, lines=lines)
    if _NOT_XML.search(text) is None:
        return text
    return _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _text(value: str) -> str:
    """XML text: escaped, controls made visible (XML 1.0 cannot hold most of them)."""
    return escape(_xml(value, lines=True))


def _attr(value: str) -> str:
    return quoteattr(_xml(value))


@dataclass
class _Case:
    """One JUnit test case: passed, or one failure or one error."""

    name: str
    failure: tuple[str, str, str] | None = None  # (message, type, text)
    error: tuple[str, str] | None = None  # (message, type)
    #: A passing case's warning: (message, text), as probe's junit says one.
    warning: tuple[str, str] | None = None


def _suite(name: str, cases: Sequence[_Case], indent: str = "  ") -> list[str]:
    """A ``<testsuite>`` whose counts are its cases'."""
    failures = sum(1 for c in cases if c.failure is not None)
    errors = sum(1 for c in cases if c.error is not None)
    lines = [
        f'{indent}<testsuite name={_attr(name)} tests="{len(cases)}" failures="{failures}" '
        f'errors="{errors}" skipped="0">'
    ]
    for case in cases:
        head = f"{indent}  <testcase classname={_attr(name)} name={_attr(case.name)}"
        if case.failure is not None:
            message, kind, text = case.failure
            lines += [
                f"{head}>",
                f"{indent}    <failure message={_attr(message)} type={_attr(kind)}>"
                f"{_text(text)}</failure>",
                f"{indent}  </testcase>",
            ]
        elif case.error is not None:
            message, kind = case.error
            lines += [
                f"{head}>",
                f"{indent}    <error message={_attr(message)} type={_attr(kind)}/>",
                f"{indent}  </testcase>",
            ]
        elif case.warning is not None:  # a passing case that says its warnings
            message, text = case.warning
            lines += [
                f"{head}>",
                f"{indent}    <properties>",
                f'{indent}      <property name="warning" value={_attr(message)}/>',
                f"{indent}    </properties>",
                f"{indent}    <system-out>{_text(text)}</system-out>",
                f"{indent}  </testcase>",
            ]
        else:
            lines.append(f"{head}/>")
    return [*lines, f"{indent}</testsuite>"]


def _document(name: str, suites: Sequence[tuple[str, Sequence[_Case]]]) -> str:
    """``<testsuites>`` of ``suites``, its counts their sums."""
    cases = [case for _, suite in suites for case in suite]
    failures = sum(1 for c in cases if c.failure is not None)
    errors = sum(1 for c in cases if c.error is not None)
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<testsuites name={_attr(name)} tests="{len(cases)}" failures="{failures}" '
        f'errors="{errors}">',
    ]
    for suite_name, suite in suites:
        lines += _suite(suite_name, suite)
    return "\n".join([*lines, "</testsuites>"])


def junit(checked: Sequence[Checked], strict: bool = False) -> str:
    """A test suite per recording, a test case per rule that found an error in it (one
    failure: how many, the first's message, then a line per finding), a passing case per
    rule that warned (its lines in ``system-out``, as probe's junit says a warning; with
    ``strict``, a failure as the errors), or ``valid`` when none did; an unreadable recording
    is a case ``readable`` with an error. Counts add up."""
    failing = ("error", "warning") if strict else ("error",)
    suites = []
    for item in checked:
        if item.unreadable is not None:
            suites.append((item.name, [_Case("readable", error=(item.unreadable, "unreadable"))]))
            continue
        by_rule: dict[str, list[tuple[int, Violation]]] = {}
        for line, finding in item.findings:
            if finding.level in ("error", "warning"):
                by_rule.setdefault(finding.rule, []).append((line, finding))
        cases = []
        for rule, found in by_rule.items():
            first = found[0][1]
            count = f"{len(found)} finding{'s' if len(found) > 1 else ''}"
            text = "\n".join(
                f"{item.name}:{line}: seq {'-' if f.seq is None else f.seq}: {f.message} ({f.spec})"
                for line, f in found
            )
            said = f"{rule}: {count}; {first.message}"
            if first.level in failing:
                cases.append(_Case(rule, failure=(said, rule, text)))
            else:
                cases.append(_Case(rule, warning=(said, text)))
        suites.append((item.name, cases or [_Case("valid")]))
    return _document("acp-proxy validate", suites)


def junit_divergences(recording: str, divergences: Sequence[str]) -> str:
    """``replay --as client --junit``: a test case per divergence (a failure each), or
    ``replay`` when the agent did as recorded."""
    cases = [
        _Case(f"divergence {n}", failure=(text, "divergence", text))
        for n, text in enumerate(divergences, 1)
    ]
    return _document("acp-proxy replay", [(recording, cases or [_Case("replay")])])


def _uri(path: str) -> str:
    """A recording's path as a URI reference: percent-encoded (``a#1.jsonl`` is no fragment,
    ``%`` no escape), an absolute one as a ``file:`` URI."""
    quoted = quote(os.fsencode(path), safe="/")
    return "file://" + quoted if path.startswith("/") else quoted


def sarif(checked: Sequence[Checked]) -> bytes:
    """SARIF 2.1.0: a run of the acp-proxy tool, its rules from the catalog, a result per
    finding located at the recording's line."""
    used = sorted({f.rule for c in checked for _, f in c.findings})
    index = {rule: n for n, rule in enumerate(used)}
    rules: list[dict[str, Any]] = []
    for rule_id in used:
        rule = RULES.get(rule_id)
        description = rule.description if rule else rule_id
        rules.append(
            {
                "id": rule_id,
                "shortDescription": {"text": description},
                "help": {"text": f"{description} Source: {rule.spec if rule else 'acp-proxy'}."},
                "defaultConfiguration": {
                    "level": _SARIF_LEVELS.get(str(rule.level), "warning") if rule else "warning"
                },
            }
        )
    results: list[dict[str, Any]] = []
    for item in checked:
        for line, finding in item.findings:
            results.append(
                {
                    "ruleId": finding.rule,
                    "ruleIndex": index[finding.rule],
                    "level": _SARIF_LEVELS.get(finding.level, "warning"),
                    "message": {"text": finding.message},
                    "locations": [
                        {
                            "physicalLocation": {
                                "artifactLocation": {"uri": _uri(item.path)},
                                "region": {"startLine": max(1, line)},
                            }
                        }
                    ],
                    "properties": {"seq": finding.seq, "spec": finding.spec},
                }
            )
    notifications = [
        {"level": "error", "message": {"text": c.unreadable}}
        for c in checked
        if c.unreadable is not None
    ]
    run: dict[str, Any] = {
        "tool": {
            "driver": {
                "name": "acp-proxy",
                "version": VERSION,
                "informationUri": "https://agentclientprotocol.com",
                "rules": rules,
            }
        },
        "results": results,
    }
    if notifications:
        run["invocations"] = [
            {"executionSuccessful": False, "toolExecutionNotifications": notifications}
        ]
    document = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [run],
    }
    return dumps(document)


def junit_checks(suite: str, cases: Sequence[tuple[str, str, str, str]]) -> str:
    """A test case per named check, ``(name, status, message, detail)``: ``fail`` is a
    failure, ``skip`` skipped, ``warn`` a passing case with a ``warning`` property, ``pass``
    an empty case (``probe --format junit``)."""
    failures = sum(1 for _, status, _, _ in cases if status == "fail")
    skipped = sum(1 for _, status, _, _ in cases if status == "skip")
    counts = f'tests="{len(cases)}" failures="{failures}" errors="0"'
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f"<testsuites name={_attr(suite)} {counts}>",
        f'  <testsuite name={_attr(suite)} {counts} skipped="{skipped}">',
    ]
    for name, status, message, detail in cases:
        lines.append(f"    <testcase classname={_attr(suite)} name={_attr(name)}>")
        if status == "fail":
            lines.append(
                f'      <failure message={_attr(message)} type="probe">{_text(detail)}</failure>'
            )
        elif status == "skip":
            lines.append(f"      <skipped message={_attr(message)}/>")
        elif status == "warn":  # a passing case that says its warning
            lines.append("      <properties>")
            lines.append(f'        <property name="warning" value={_attr(message)}/>')
            lines.append("      </properties>")
            lines.append(f"      <system-out>warning: {_text(detail)}</system-out>")
        else:
            lines.append(f"      <system-out>{_text(detail)}</system-out>")
        lines.append("    </testcase>")
    lines += ["  </testsuite>", "</testsuites>"]
    return "\n".join(lines)
