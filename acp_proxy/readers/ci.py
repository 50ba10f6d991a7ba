"""Findings as CI servers read them: JUnit XML (GitHub, GitLab and Jenkins show test cases) and
SARIF 2.1.0 (code scanning: a result per finding, the rule's help from the catalog, the
recording and line as the location). Pure: results in, text out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from xml.sax.saxutils import escape, quoteattr

from acp_proxy.core.rules import RULES
from acp_proxy.core.validator import Violation
from acp_proxy.core.version import VERSION
from acp_proxy.core.visible import dumps, visible

__all__ = ["Checked", "junit", "junit_checks", "junit_divergences", "sarif"]

#: SARIF's level for each of ours.
_SARIF_LEVELS = {"error": "error", "warning": "warning", "info": "note"}


@dataclass
class Checked:
    """One recording, validated: its findings with their lines, or why it could not be read."""

    path: str
    findings: list[tuple[int, Violation]] = field(default_factory=list)
    unreadable: str | None = None


def _text(value: str) -> str:
    """XML text: escaped, controls made visible (XML 1.0 cannot hold most of them)."""
    return escape(visible(value, lines=True))


def _attr(value: str) -> str:
    return quoteattr(visible(value))


def junit(checked: Sequence[Checked]) -> str:
    """A test case per recording; a failure per error-level finding (rule, seq, message);
    an unreadable recording is an error."""
    failures = sum(1 for c in checked for _, f in c.findings if f.level == "error")
    errors = sum(1 for c in checked if c.unreadable is not None)
    lines = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<testsuites name="acp-proxy validate" tests="{len(checked)}" failures="{failures}" '
        f'errors="{errors}">',
        f'  <testsuite name="acp-proxy validate" tests="{len(checked)}" failures="{failures}" '
        f'errors="{errors}" skipped="0">',
    ]
    for item in checked:
        lines.append(f'    <testcase classname="acp-proxy.validate" name={_attr(item.path)}>')
        if item.unreadable is not None:
            lines.append(f'      <error message={_attr(item.unreadable)} type="unreadable"/>')
        for line, finding in item.findings:
            if finding.level != "error":
                continue
            seq = "-" if finding.seq is None else finding.seq
            detail = f"{item.path}:{line}: seq {seq}: {finding.message} ({finding.spec})"
            lines.append(
                f"      <failure message={_attr(f'{finding.rule}: {finding.message}')} "
                f"type={_attr(finding.rule)}>{_text(detail)}</failure>"
            )
        lines.append("    </testcase>")
    lines += ["  </testsuite>", "</testsuites>"]
    return "\n".join(lines)


def junit_divergences(recording: str, divergences: Sequence[str]) -> str:
    """``replay --as client --junit``: one test case, a failure per divergence."""
    failures = len(divergences)
    body = [
        f'      <failure message={_attr(d)} type="divergence">{_text(d)}</failure>'
        for d in divergences
    ]
    return "\n".join(
        [
            '<?xml version="1.0" encoding="UTF-8"?>',
            f'<testsuites name="acp-proxy replay" tests="1" failures="{failures}" errors="0">',
            f'  <testsuite name="acp-proxy replay" tests="1" failures="{failures}" errors="0" '
            'skipped="0">',
            f'    <testcase classname="acp-proxy.replay" name={_attr(recording)}>',
            *body,
            "    </testcase>",
            "  </testsuite>",
            "</testsuites>",
        ]
    )


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
                                "artifactLocation": {"uri": item.path},
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
    failure, ``skip`` skipped, ``pass`` an empty case (``probe --format junit``)."""
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
        else:
            lines.append(f"      <system-out>{_text(detail)}</system-out>")
        lines.append("    </testcase>")
    lines += ["  </testsuite>", "</testsuites>"]
    return "\n".join(lines)
