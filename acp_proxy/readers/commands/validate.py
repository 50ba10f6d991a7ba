"""``validate``: recorded sessions checked again (:mod:`acp_proxy.readers.annotate`), as text,
JSON, JUnit or SARIF (:mod:`acp_proxy.readers.ci`)."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

import click

from acp_proxy.clihelp import command, complete_path, say, stdout_lines
from acp_proxy.core.visible import visible
from acp_proxy.readers.commands.shared import last_option, the_recordings

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
    "recordings", nargs=-1, required=False, metavar="RECORDING...", shell_complete=complete_path
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
@last_option
def validate(
    recordings: tuple[str, ...], last: bool, fmt: str, by_rule: bool, strict: bool, every: bool
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

    recordings = the_recordings(recordings, last)

    for option, given in (("--by-rule", by_rule), ("--all", every)):
        if given and fmt != "text":
            raise click.UsageError(f"{option} has no effect with --format {fmt}")
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
            same = _Same()
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
                        same.add(line, finding)
                    else:
                        emit(finding_line(name, line, finding, fmt))
            except RecordingError as exc:
                _complain(exc)
                item.unreadable = str(exc)
                unreadable = True
            for text in same.lines(name):
                emit(text)
        if fmt == "junit":
            emit(junit(checked, strict))
        elif fmt == "sarif":
            emit(sarif(checked).decode())
    if fmt == "text":
        _summary(checked, levels, rules if by_rule else {})
    sys.exit(2 if unreadable else 1 if errors else 0)


def _summary(checked: list[Any], levels: dict[str, int], rules: dict[str, tuple[int, str]]) -> None:
    """On stderr, as a compiler's count (stdout is the findings, a line each): files,
    errors, warnings, info; a line per rule of ``rules`` (``--by-rule``)."""
    if all(item.unreadable for item in checked):
        return
    say(_validated(checked, levels))
    for rule, (count, level) in sorted(rules.items(), key=lambda r: (-r[1][0], r[0])):
        say(f"  {rule}: {count} {level}")


class _Same:
    """A file's findings, identical ones (level, rule, message) as one: the first's line,
    and every seq it came at."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, str, str], tuple[int, Any, list[int | None]]] = {}

    def add(self, line: int, finding: Any) -> None:
        key = (finding.level, finding.rule, finding.message)
        if key in self._seen:
            self._seen[key][2].append(finding.seq)
        else:
            self._seen[key] = (line, finding, [finding.seq])

    def lines(self, name: str) -> Iterator[str]:
        """A line each, in the order they first came: `` (x31, seq 19-49)`` after one that
        came more than once."""
        from acp_proxy.readers.annotate import finding_line

        for line, finding, seqs in self._seen.values():
            known = [seq for seq in seqs if seq is not None]
            span = f", seq {min(known)}-{max(known)}" if len(set(known)) > 1 else ""
            times = f" (x{len(seqs)}{span})" if len(seqs) > 1 else ""
            yield finding_line(name, line, finding, "text") + times


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
