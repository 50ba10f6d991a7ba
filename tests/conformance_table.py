"""The README's conformance table, from probe's reports on the production agents.

Usage: python tests/conformance_table.py DIR

DIR holds the JSON reports `tests/test_production_agents.py` keeps there when run with
``ACP_PROXY_PROBE_OUT=DIR`` (``NAME.json``, one per agent): a row per check, a column per
agent (its verdict: a check mark pass, a dash skip, a cross fail, ! a warning; checks with the same verdicts share a row), and
the suites that check something alike (as issue #46 compared them: acpx's ``acp-core-v1``
profile and the ACP registry's protocol matrix; ¹ both, ² what they tried first; unmarked:
probe alone).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

#: The agents, in the README's order: (report name, column heading; the versions are
#: "Tested with"'s).
AGENTS = (
    ("claude-agent-acp", "claude"),
    ("codex-acp", "codex"),
    ("gemini", "gemini"),
    ("opencode", "opencode"),
    ("qwen", "qwen"),
    ("copilot", "copilot"),
    ("pi-acp", "pi"),
    ("gptme-acp", "gptme"),
    ("kimi", "kimi"),
    ("deepagents-acp", "deepagents"),
)
#: A verdict in a cell (the README stays within 40 KB: one character each).
MARKS = {"pass": "\u2713", "skip": "\u2013", "fail": "**\u2717**", "warn": "!"}

#: Which suites check what a probe check checks (issue #46's comparison): "peers" for what
#: the peer suites try and probe did not before; "all three" for what they share.
SUITES = {
    "handshake": "all",
    "session-new": "all",
    "prompt": "all",
    "cancel": "all",
    "session-id-unique": "peers",
    "invalid-params": "peers",
    "unknown-session": "peers",
    "resource-link": "peers",
    "empty-prompt": "peers",
    "cancel-idle": "peers",
    "prompt-after-cancel": "peers",
    "session-load": "peers",
}


def cell(check: dict[str, Any]) -> str:
    return MARKS[str(check["status"])]


def table(reports: dict[str, dict[str, Any]]) -> list[str]:
    """The table: a row per check, the checks with the same verdicts on every agent in one
    row (the README stays within 40 KB), each check marked with its suites (¹ all, ² peers)."""
    names = [check["check"] for check in next(iter(reports.values()))["checks"]]
    ran = [(name, heading) for name, heading in AGENTS if name in reports]
    rows: dict[tuple[str, ...], list[str]] = {}
    for name in names:
        verdicts = []
        for agent, _ in ran:
            found = {c["check"]: c for c in reports[agent]["checks"]}
            verdicts.append(cell(found[name]) if name in found else "")
        mark = {"all": "¹", "peers": "²"}.get(SUITES.get(name, ""), "")
        rows.setdefault(tuple(verdicts), []).append(f"`{name}`{mark}")
    lines = [
        "| checks | " + " | ".join(heading for _, heading in ran) + " |",
        "|-|" + "-|" * len(ran),
    ]
    for row, checks in rows.items():
        lines.append(f"| {', '.join(checks)} | " + " | ".join(row) + " |")
    return lines


def quoted(text: str, otherwise: str) -> str:
    """The sentence a rule's description quotes (its first ``"..."``), else ``otherwise``'s,
    else ``otherwise``."""
    for said in (text, otherwise):
        start = said.find('"')
        end = said.find('"', start + 1)
        if 0 <= start < end:
            return said[start : end + 1]
    return otherwise


def notes(reports: dict[str, dict[str, Any]]) -> list[str]:
    """Below the table: each failure (a real bug) by its rule and the sentence it breaks (the
    check's basis, and what the agent did, where no rule of the validator's names it), the
    agents with the same one together; then each warning's basis once, with its agents."""
    from acp_proxy.core.rules import RULES

    headings = dict(AGENTS)
    failed: dict[str, list[str]] = {}
    warned: dict[str, list[str]] = {}
    bases: dict[str, str] = {}
    for agent, report in reports.items():
        for check in report["checks"]:
            if check["status"] == "warn":
                warned.setdefault(check["check"], []).append(headings[agent])
                bases[check["check"]] = check["basis"]
            if check["status"] != "fail":
                continue
            rule = RULES.get(check["rule"] or "")
            if rule is not None:
                sentence = quoted(rule.description, check["basis"])
                why = f"`{rule.id}`, {rule.spec}: {sentence}"
            else:
                why = f"{check['basis']}; here: {check['reason']}"
            failed.setdefault(f"`{check['check']}`: {why}", []).append(headings[agent])
    lines = [f"- **\u2717** {', '.join(agents)} {why}" for why, agents in failed.items()]
    for name, agents in warned.items():
        lines.append(f"- ! {', '.join(agents)} `{name}`: {bases[name]}")
    return lines


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    directory = Path(argv[0])
    reports = {
        name: orjson.loads((directory / f"{name}.json").read_bytes())
        for name, _ in AGENTS
        if (directory / f"{name}.json").exists()
    }
    if not reports:
        print(f"no report in {directory}", file=sys.stderr)
        return 1
    print("\n".join([*table(reports), "", *notes(reports)]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
