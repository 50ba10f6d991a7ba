"""The README's conformance tables, from probe's reports on the production agents and
test-agent's on the clients.

Usage: python tests/conformance_table.py [--clients] DIR

DIR holds the JSON reports `tests/test_production_agents.py` keeps there when run with
``ACP_PROXY_PROBE_OUT=DIR`` (``NAME.json``, one per agent): a row per check, a column per
agent (its verdict: a check mark pass, a dash skip, a cross fail, ! a warning; checks with the same verdicts share a row), and
the suites that check something alike (as issue #46 compared them: acpx's ``acp-core-v1``
profile and the ACP registry's protocol matrix; ¹ both, ² what they tried first; unmarked:
probe alone).

With ``--clients``, DIR holds test-agent's JSON reports on the clients, kept there by the
client tests of `tests/test_production_agents.py` run with ``ACP_PROXY_TEST_AGENT_OUT=DIR``:
a row per check, a column per client (its worst verdict), and below, a line per failed check:
its basis (the sentence, or the validator's rule), and what each client did.
"""

from __future__ import annotations

import re
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
    return markdown([heading for _, heading in ran], rows)


def markdown(headings: list[str], rows: dict[tuple[str, ...], list[str]]) -> list[str]:
    """The table's lines: the headings, then a row per set of verdicts, its checks first."""
    lines = ["| checks | " + " | ".join(headings) + " |", "|-|" + "-|" * len(headings)]
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


#: The clients test-agent runs against, in the README's order: (report name, heading).
CLIENTS = (
    ("acpx", "acpx"),
    ("ts-sdk", "TS SDK"),
    ("ts-sdk-v2", "TS v2"),
    ("ts-sdk-example", "TS example"),
    ("python-sdk", "Py SDK"),
    ("chuk-acp", "chuk-acp"),
    ("acpbox", "acpbox"),
)
#: A client's verdict on a check it met more than once (each turn, each frame): the worst.
WORST = ("fail", "warn", "pass", "skip")


def client_table(reports: dict[str, dict[str, Any]]) -> list[str]:
    """A row per test-agent check (the same verdicts on every client share one), a column
    per client, its worst verdict on the check."""
    ran = [(name, heading) for name, heading in CLIENTS if name in reports]
    names: list[str] = []
    for name, _ in ran:
        names += [c["check"] for c in reports[name]["checks"] if c["check"] not in names]
    rows: dict[tuple[str, ...], list[str]] = {}
    for check in names:
        verdicts = []
        for client, _ in ran:
            found = [c["status"] for c in reports[client]["checks"] if c["check"] == check]
            worst = min(found, key=WORST.index) if found else None
            verdicts.append(MARKS[worst] if worst else "")
        rows.setdefault(tuple(verdicts), []).append(f"`{check}`")
    return markdown([heading for _, heading in ran], rows)


def client_notes(reports: dict[str, dict[str, Any]]) -> list[str]:
    """A line per failed check, then per warned one: its basis once (the validator's rule
    and its sentence, for valid-frames), then what each client did (the clients that did
    the same together)."""
    from acp_proxy.core.rules import RULES

    headings = dict(CLIENTS)
    done: dict[str, dict[str, list[str]]] = {}
    bases: dict[str, str] = {}
    marks: dict[str, str] = {}
    for client, _ in CLIENTS:
        report = reports.get(client)
        if report is None:
            continue
        catalog = {spec["name"]: spec["basis"] for spec in report.get("catalog", ())}
        for check in report["checks"]:
            if check["status"] not in ("fail", "warn"):
                continue
            key, basis = check["check"], catalog.get(check["check"], "")
            rule = RULES.get(check["rule"] or "") if key == "valid-frames" else None
            if rule is not None:  # the validator's rule, and its sentence if it quotes one
                sentence = quoted(rule.description, "")
                basis = f"`{rule.id}`, {rule.spec}" + (f": {sentence}" if sentence else "")
            bases[key] = basis
            marks[key] = min(marks.get(key, "warn"), check["status"], key=WORST.index)
            # a path of the test's own (a temporary directory) said by its name
            why = re.sub(r"'/[^']*/([^/']+)'", r"'\1'", check["why"])
            said = done.setdefault(key, {}).setdefault(why, [])
            if headings[client] not in said:
                said.append(headings[client])
    lines = []
    order = [spec["name"] for report in reports.values() for spec in report.get("catalog", ())]
    ranked = sorted(
        done, key=lambda name: (marks[name] != "fail", order.index(name) if name in order else 0)
    )
    for key in ranked:
        here = "; ".join(f"{', '.join(clients)}: {why}" for why, clients in done[key].items())
        mark = "**\u2717**" if marks[key] == "fail" else "!"
        lines.append(f"- {mark} `{key}` ({bases[key]}): {here}")
    return lines


def main(argv: list[str]) -> int:
    clients = argv[:1] == ["--clients"]
    argv = argv[1:] if clients else argv
    if len(argv) != 1:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    directory = Path(argv[0])
    reports = {
        name: orjson.loads((directory / f"{name}.json").read_bytes())
        for name, _ in (CLIENTS if clients else AGENTS)
        if (directory / f"{name}.json").exists()
    }
    if not reports:
        print(f"no report in {directory}", file=sys.stderr)
        return 1
    if clients:
        print("\n".join([*client_table(reports), "", *client_notes(reports)]))
    else:
        print("\n".join([*table(reports), "", *notes(reports)]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
