"""``search``: frames across recordings matching a pattern (:mod:`acp_proxy.readers.catalog`)."""

from __future__ import annotations

import sys

import click

from acp_proxy.clihelp import (
    command,
    complete_path,
    complete_rule,
    json_format_option,
    say,
    stdout_lines,
    wants_json,
)
from acp_proxy.core.visible import dumps, visible
from acp_proxy.readers.commands.shared import say_unlisted, where_to_look


@command(
    short="Frames across recordings matching a pattern.",
    examples=[
        "acp-proxy search session/request_permission",
        "acp-proxy search --rule 'message-id-*' . out/",
        "acp-proxy search -l --from client README",
    ],
)
@click.argument("pattern")
@click.argument("paths", nargs=-1, metavar="[DIR|FILES...]", shell_complete=complete_path)
@click.option("--method", metavar="GLOB", help="Only frames whose method matches.")
@click.option(
    "--rule",
    metavar="GLOB",
    shell_complete=complete_rule,
    help="Only frames with a finding of a matching rule.",
)
@click.option(
    "--from", "side", type=click.Choice(["client", "agent"]), help="Only frames sent by that side."
)
@click.option("--session", metavar="ID", help="Only frames of that session.")
@click.option("-i", "--ignore-case", is_flag=True, help="Match PATTERN without regard to case.")
@click.option("-l", "files_only", is_flag=True, help="Print only the names of files with a match.")
@json_format_option("text: PATH:LINE: seq SEQ: SUMMARY lines; json: an object per match.")
def search(
    pattern: str,
    paths: tuple[str, ...],
    method: str | None,
    rule: str | None,
    side: str | None,
    session: str | None,
    ignore_case: bool,
    files_only: bool,
    fmt: str,
    legacy_json: bool,
) -> None:
    """The frames across recordings whose method, update variant, rule or text matches
    PATTERN (a regular expression), grep-style: PATH:LINE: seq SEQ: METHOD SUMMARY. Default: the
    recordings directory. Exit 0 when something matched, 1 when nothing did, 2 on error.
    """
    as_json = wants_json(fmt, legacy_json)
    if files_only and as_json:
        raise click.UsageError("--format json has no effect with -l (it prints file names)")
    import re

    from acp_proxy.readers.catalog import Unlisted, recordings_in
    from acp_proxy.readers.catalog import search as find

    try:
        re.compile(pattern)
    except re.error as exc:
        raise click.BadParameter(f"{pattern!r}: {exc}", param_hint="PATTERN") from None
    if rule is not None:
        _known_rule(rule)
    targets = where_to_look(paths)
    files, problems = recordings_in(targets)
    for problem in problems:
        say(f"acp-proxy: {problem}")
    matched, named, failed = False, set(), False
    with stdout_lines("never") as emit:
        for hit in find(pattern, files, method, rule, side, session, ignore_case, files_only):
            if isinstance(hit, Unlisted):
                failed = say_unlisted([hit], targets) or failed
                continue
            matched = True
            # (a newline in a file name, a rule or a finding makes no line of its own)
            if files_only:
                if hit.path not in named:
                    named.add(hit.path)
                    emit(visible(hit.path))
            elif as_json:
                emit(dumps(hit.as_json()).decode())
            else:
                seq = "-" if hit.seq is None else hit.seq
                rules = f"  [{', '.join(hit.rules)}]" if hit.rules else ""
                emit(visible(f"{hit.path}:{hit.line}: seq {seq}: {hit.summary}{rules}"))
    sys.exit(2 if problems or failed else 0 if matched else 1)


def _known_rule(glob: str) -> None:
    """A ``--rule`` GLOB that matches no rule of the catalog is a usage error naming the
    close ones (as ``rules RULE``): it could only ever match nothing."""
    import difflib
    import fnmatch

    from acp_proxy.core.rules import RULES

    if any(fnmatch.fnmatchcase(name, glob) for name in RULES):
        return
    close = difflib.get_close_matches(glob, list(RULES), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise click.BadParameter(
        visible(f"{glob!r} matches no rule{hint}; `acp-proxy rules` lists them"),
        param_hint="'--rule'",
    )
