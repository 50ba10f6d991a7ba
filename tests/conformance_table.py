"""The README's conformance table, from probe's reports on the production agents.

Usage: python tests/conformance_table.py DIR

DIR holds the JSON reports `tests/test_production_agents.py` keeps there when run with
``ACP_PROXY_PROBE_OUT=DIR`` (``NAME.json``, one per agent): a row per check, a column per
agent (its verdict; a failure with the rule it broke), and the suites that check something
alike (as issue #46 compared them: acpx's ``acp-core-v1`` profile and the ACP registry's
protocol matrix; ``probe`` where neither does).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import orjson

#: The agents, in the README's order: (report name, column heading).
AGENTS = (
    ("claude-agent-acp", "claude-agent-acp 0.101.0"),
    ("codex-acp", "codex-acp 2.6.0"),
    ("gemini", "Gemini CLI 0.61.0"),
    ("opencode", "opencode 1.18.33"),
    ("qwen", "Qwen Code 0.24.4"),
)

#: Which suites check what a probe check checks (issue #46's comparison): "peers" for what
#: the peer suites try and probe did not before; "all three" for what they share.
SUITES = {
    "handshake": "all three",
    "session-new": "all three",
    "prompt": "all three",
    "cancel": "all three",
    "session-id-unique": "peers",
    "invalid-params": "peers",
    "unknown-session": "peers",
    "resource-link": "peers",
    "empty-prompt": "peers",
    "cancel-idle": "peers",
    "prompt-after-cancel": "peers",
    "session-load": "probe (replay); peers (replay after the response)",
}


def cell(check: dict[str, Any]) -> str:
    status, rule = str(check["status"]), check.get("rule")
    if status == "fail":
        return f"**fail** (`{rule}`)" if rule else "**fail**"
    return status


def table(reports: dict[str, dict[str, Any]]) -> list[str]:
    names = [check["check"] for check in next(iter(reports.values()))["checks"]]
    ran = [(name, heading) for name, heading in AGENTS if name in reports]
    lines = [
        "| check | " + " | ".join(heading for _, heading in ran) + " | suites |",
        "| --- | " + " | ".join("---" for _ in ran) + " | --- |",
    ]
    for name in names:
        verdicts = []
        for agent, _ in ran:
            found = {c["check"]: c for c in reports[agent]["checks"]}
            verdicts.append(cell(found[name]) if name in found else "")
        lines.append(f"| `{name}` | " + " | ".join(verdicts) + f" | {SUITES.get(name, 'probe')} |")
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
    print("\n".join(table(reports)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
