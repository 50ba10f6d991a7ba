"""``validate``: recorded sessions checked again (:mod:`acp_proxy.readers.annotate`), as text,
JSON, JUnit or SARIF (:mod:`acp_proxy.readers.ci`)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import click

from acp_proxy.clihelp import command, complete_path, say, stdout_lines
from acp_proxy.core.visible import visible

if TYPE_CHECKING:
    from acp_proxy.transcript.reading import RecordingError


@command(
    short="Check recorded sessions again; exit 1 on an error.",
    examples=[
        "acp-proxy validate session.jsonl",
        "acp-proxy validate --by-rule out/*.jsonl",
        "acp-proxy validate --format junit out/*.jsonl > junit.xml",
    ],
)
@click.argument(
    "recordings", nargs=-1, required=True, metavar="RECORDING...", shell_complete=complete_path
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "junit", "sarif"]),
    default="text",
    show_default=True,
    help="text: FILE:LINE: seq SEQ: LEVEL RULE: MESSAGE lines; json: one object per finding; "
    "junit: JUnit XML (a suite per recording, a test case per rule); sarif: SARIF 2.1.0.",
)
@click.option(
    "--by-rule",
    is_flag=True,
    help="text: after the summary line (stderr), a line per rule broken: RULE: N LEVEL.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Warnings fail too (exit 1), such as what the shipped schemas do not define yet.",
)
@click.option(
    "--all",
    "every",
    is_flag=True,
    help="text: a line for every finding (identical ones, same rule and message, are "
    "otherwise one line: the first, with a count and the seqs they span).",
)
def validate(
    recordings: tuple[str, ...], fmt: str, by_rule: bool, strict: bool, every: bool
) -> None:
    """Re-run the validator over recorded sessions and print the findings.

    Stored findings are ignored and recomputed; a file with several sessions
    appended is validated session by session. As text, a line per finding,
    identical ones (rule and message) one line with a count (x31, seq 19-49) as
    compilers do, and a summary line on stderr: files, errors, warnings, info. Exit status: 0 no
    error-level finding (with --strict: no warning either), 1 at least one, 2 a file
    that cannot be read.
    """
    from acp_proxy.readers.annotate import finding_line, located, probe_marks, read
    from acp_proxy.readers.ci import Checked, junit, sarif
    from acp_proxy.transcript.reading import RecordingError

    if by_rule and fmt != "text":
        raise click.UsageError("--by-rule has no effect with --format " + fmt)
    if every and fmt != "text":
        raise click.UsageError("--all has no effect with --format " + fmt)
    collapse = fmt == "text" and not every
    errors = 0
    failing = ("error", "warning") if strict else ("error",)
    unreadable = False
    checked: list[Checked] = []
    levels: dict[str, int] = {}
    rules: dict[str, tuple[int, str]] = {}
    with stdout_lines("never") as emit:
        for path in recordings:
            item = Checked(path)
            checked.append(item)
            same: dict[tuple[str, str, str], list[Any]] = {}  # (the first line, its seqs)
            try:
                name = item.name  # (- is "(standard input)", as grep and search say)
                marks = probe_marks(path)
                for line, finding in located(_schemas_noted(name, read(path)), marks):
                    errors += finding.level in failing
                    levels[finding.level] = levels.get(finding.level, 0) + 1
                    rules[finding.rule] = (rules.get(finding.rule, (0, ""))[0] + 1, finding.level)
                    if fmt in ("junit", "sarif"):
                        item.findings.append((line, finding))
                    elif collapse:
                        key = (finding.level, finding.rule, finding.message)
                        if key in same:
                            same[key][2].append(finding.seq)
                        else:
                            same[key] = [line, finding, [finding.seq]]
                    else:
                        emit(finding_line(name, line, finding, fmt))
            except RecordingError as exc:
                _complain(exc)
                item.unreadable = str(exc)
                unreadable = True
            for line, finding, seqs in same.values():
                emit(finding_line(name, line, finding, fmt) + _times(seqs))
        if fmt == "junit":
            emit(junit(checked))
        elif fmt == "sarif":
            emit(sarif(checked).decode())
    if fmt == "text" and not all(item.unreadable for item in checked):
        # on stderr, as a compiler's count: stdout is the findings, a line each
        say(_validated(checked, levels))
        for rule, (count, level) in sorted(rules.items(), key=lambda r: (-r[1][0], r[0])):
            if by_rule:
                say(f"  {rule}: {count} {level}")
    sys.exit(2 if unreadable else 1 if errors else 0)


def _times(seqs: list[int | None]) -> str:
    """How often a finding came, and the seqs it spans: `` (x31, seq 19-49)``; nothing
    for one."""
    if len(seqs) == 1:
        return ""
    known = [seq for seq in seqs if seq is not None]
    span = f", seq {min(known)}-{max(known)}" if known and min(known) != max(known) else ""
    return f" (x{len(seqs)}{span})"


def _schemas_noted(path: str, items: Iterable[Any]) -> Iterator[Any]:
    """``items`` as they are; a session recorded against other schemas than the shipped ones
    said on stderr at its start record (its live findings were made against those: today's
    may differ, as a newer schema's variant is no longer a warning)."""
    from acp_proxy.core.schema import schema_sources
    from acp_proxy.transcript.records import StartRecord

    shipped = schema_sources().as_dict()
    for item in items:
        record = getattr(item, "record", None)
        if type(record) is StartRecord and record.schemas:
            said = record.schemas
            names = [n for n in shipped if n != "from" and said.get(n) != shipped[n]]
            if names:
                then = ", ".join(f"{n} {said.get(n, '?')}" for n in names)
                now = ", ".join(f"{n} {shipped[n]}" for n in names)
                where = f"{path}:{record.line}"
                said_now = f"checked against {now} (the stored findings may differ)"
                say(visible(f"acp-proxy: {where}: recorded against schema {then}; {said_now}"))
        yield item


def _validated(checked: list[Any], levels: dict[str, int]) -> str:
    """``validate``'s summary line: files, errors, warnings, info."""
    files = len(checked)
    line = f"{files} file{'s' if files != 1 else ''}"
    unreadable = sum(1 for item in checked if item.unreadable)
    if unreadable:
        line += f" ({unreadable} unreadable)"
    counts = [(levels.get(level, 0), level) for level in ("error", "warning", "info")]
    words = {"error": "errors", "warning": "warnings", "info": "info"}
    said = ", ".join(f"{n} {words[level] if n != 1 else level}" for n, level in counts)
    return f"{line}: {said}"


def _complain(exc: RecordingError) -> None:
    say(f"acp-proxy: {exc}")
