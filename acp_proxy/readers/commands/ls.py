"""``ls``: the recorded sessions, newest first (:mod:`acp_proxy.readers.catalog`), and the
recordings directory tidied (:func:`acp_proxy.transcript.names.prune`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from acp_proxy.clihelp import (
    Seconds,
    as_age,
    as_size,
    command,
    complete_path,
    envvar,
    json_format_option,
    no_effect,
    say,
    stdout_lines,
    wants_json,
)
from acp_proxy.core.visible import dumps
from acp_proxy.readers.commands.shared import say_unlisted, where_to_look


@command(
    "ls",
    short="The recorded sessions, newest first.",
    examples=[
        "acp-proxy ls",
        "acp-proxy ls -n 5 --with-findings --since 2d",
        "acp-proxy ls --prune --keep-days 30 --dry-run",
    ],
)
@click.argument("paths", nargs=-1, metavar="[DIR|FILES...]", shell_complete=complete_path)
@json_format_option("text: a line per session; json: an object per session, for tools.")
@click.option(
    "--since",
    callback=as_age,
    metavar="AGE",
    help="Only sessions started in the last AGE (2d, 12h).",
)
@click.option(
    "--until", callback=as_age, metavar="AGE", help="Only sessions started before AGE ago."
)
@click.option(
    "--agent", metavar="NAME", help="Only sessions whose agent name or command contains NAME."
)
@click.option("--with-findings", is_flag=True, help="Only sessions with errors or warnings.")
@click.option(
    "-n",
    "--max-count",
    type=click.IntRange(min=1),
    metavar="N",
    help="Only the N newest sessions (as git log -n).",
)
@click.option(
    "--prune",
    is_flag=True,
    help="First remove old recordings from DIR (one; default: the recordings directory), as "
    "--keep-days/--keep-size say.",
)
@click.option(
    "--dry-run", is_flag=True, help="With --prune: say what would be removed, remove nothing."
)
@click.option(
    "--keep-days",
    type=Seconds(high=100_000.0),
    envvar=envvar("KEEP_DAYS"),
    metavar="N",
    help="With --prune: remove recordings older than N days.",
)
@click.option(
    "--keep-size",
    callback=as_size,
    envvar=envvar("KEEP_SIZE"),
    metavar="SIZE",
    help="With --prune: remove the oldest until the rest fit SIZE (500M, 2G).",
)
def ls(
    paths: tuple[str, ...],
    fmt: str,
    legacy_json: bool,
    since: Any,
    until: Any,
    agent: str | None,
    with_findings: bool,
    max_count: int | None,
    prune: bool,
    dry_run: bool,
    keep_days: float | None,
    keep_size: int | None,
) -> None:
    """The recorded sessions, newest first: start, agent, protocol version, duration, prompt
    turns, frames, findings by level, size, path. Default: the recordings directory.

    A session's summary is read once and kept in a small index in the user's cache
    directory ($XDG_CACHE_HOME or ~/.cache, acp-proxy/), read again when the file changes.

    Exit status: 0 listed (none, too), 2 DIR cannot be read.
    """
    as_json = wants_json(fmt, legacy_json)
    from acp_proxy.readers.catalog import list_sessions, recordings_in, select, table
    from acp_proxy.transcript.names import default_record_dir
    from acp_proxy.transcript.names import prune as prune_directory

    if "-" in paths:  # (ls lists files: their size, their time, an index of them)
        raise click.UsageError("- (standard input) is no file to list (show - reads it)")
    targets = where_to_look(paths)
    if not targets:
        say(f"acp-proxy: no recordings yet in {default_record_dir()}")
    if not prune:
        no_effect("without --prune", "keep_days", "keep_size", "dry_run")
    if prune:
        if keep_days is None and keep_size is None:
            raise click.UsageError("--prune needs --keep-days or --keep-size")
        # one directory, the one named (else the default): never another than it says
        if paths and (len(paths) != 1 or not Path(paths[0]).is_dir()):
            raise click.UsageError("--prune tidies one directory: name one DIR, or none")
        done = "would remove" if dry_run else "removed"
        for target in targets:
            for removed in prune_directory(Path(target), keep_days, keep_size, dry_run=dry_run):
                say(f"acp-proxy: {done} {removed}")
    files, problems = recordings_in(targets)
    for problem in problems:
        say(f"acp-proxy: {problem}")
    sessions, unlisted = list_sessions(files)
    failed = say_unlisted(unlisted, targets)
    shown = select(sessions, since, until, agent, with_findings)[:max_count]
    with stdout_lines("never") as emit:
        for line in (dumps(s.as_json()).decode() for s in shown) if as_json else table(shown):
            emit(line)
    sys.exit(2 if problems or failed else 0)
