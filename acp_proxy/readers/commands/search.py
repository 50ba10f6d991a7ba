"""``search``: frames across recordings matching a pattern (:mod:`acp_proxy.readers.catalog`)."""

from __future__ import annotations

import sys
from typing import Any

import click

from acp_proxy.clihelp import (
    color_option,
    command,
    complete_path,
    complete_rule,
    json_format_option,
    no_effect,
    say,
    stdout_lines,
    use_color,
    wants_json,
)
from acp_proxy.core.visible import dumps, visible
from acp_proxy.readers.commands.shared import say_unlisted, where_to_look


@command(
    short="Frames across recordings matching a pattern.",
    examples=[
        "acp-proxy search session/request_permission",
        "acp-proxy search --rule 'message-id-*' out/",
        "acp-proxy search -l --from client README",
    ],
)
@click.argument("pattern", required=False)
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
@click.option(
    "-e",
    "--regexp",
    metavar="PATTERN",
    help="The pattern (as grep -e): every argument is then where to look.",
)
@click.option("-i", "--ignore-case", is_flag=True, help="Match PATTERN without regard to case.")
@click.option("-l", "files_only", is_flag=True, help="Print only the names of files with a match.")
@json_format_option("text: PATH:LINE: seq SEQ: SUMMARY lines; json: an object per match.")
@color_option("Highlight what matched")
def search(
    pattern: str | None,
    paths: tuple[str, ...],
    method: str | None,
    rule: str | None,
    side: str | None,
    session: str | None,
    regexp: str | None,
    ignore_case: bool,
    files_only: bool,
    fmt: str,
    legacy_json: bool,
    color: str,
) -> None:
    """The frames across recordings whose method, update variant, rule or text matches
    PATTERN (a regular expression), grep-style: PATH:LINE: seq SEQ: METHOD SUMMARY, then
    what matched in the frame with a little around it. Default: the recordings directory.
    With --rule or --method, PATTERN may be left out (every frame they keep): a first
    argument naming an existing file or directory is then where to look (-e PATTERN
    says it is the pattern). Exit status: 0 something matched, 1 nothing did, 2 an error.
    """
    as_json = wants_json(fmt, legacy_json)
    pattern, paths = _pattern_and_paths(pattern, paths, regexp, bool(rule or method))
    if as_json or files_only:
        no_effect("with --format json" if as_json else "with -l", "color")
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
    highlight = not as_json and use_color(color)
    found = find(pattern, files, method, rule, side, session, ignore_case, files_only)
    with stdout_lines("never" if as_json else color) as emit:
        for hit in _bounded(found, pattern):
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
                line = visible(f"{hit.path}:{hit.line}: seq {seq}: {hit.summary}{rules}")
                emit(line + _matched(hit, highlight))
    sys.exit(2 if problems or failed else 0 if matched else 1)


def _bounded(found: Any, pattern: str) -> Any:
    """The hits of ``found``; a pattern that takes too long on one frame (it backtracks
    without end: ``(.*.*)*x``) a one-line error, exit 2."""
    from acp_proxy.readers.catalog import TooSlow

    try:
        yield from found
    except TooSlow as exc:
        shown = pattern if len(pattern) <= 80 else f"{pattern[:80]}…"
        say(
            f"acp-proxy: the pattern {shown!r} took {exc} (its budget): it backtracks "
            "too much; simplify it (no repeat inside a repeat, like (a*)*)"
        )
        sys.exit(2)


def _pattern_and_paths(
    pattern: str | None, paths: tuple[str, ...], regexp: str | None, filtered: bool
) -> tuple[str, tuple[str, ...]]:
    """PATTERN and where to look: ``-e PATTERN`` makes every argument a place; with a
    filter (``--rule``, ``--method``), a first argument that names an existing file or
    directory is a place too (``search --rule X out/``), and the pattern matches all."""
    import os

    if regexp is not None:
        return regexp, (*((pattern,) if pattern is not None else ()), *paths)
    if pattern is None:
        if not filtered:
            raise click.UsageError("missing argument 'PATTERN' (or -e PATTERN, or --rule GLOB)")
        return "", paths
    if filtered and (pattern == "-" or os.path.exists(pattern)):
        return "", (pattern, *paths)
    return pattern, paths


#: The most of a match shown (a pattern like ``a.*b`` may span a whole message).
_SHOWN = 120


def _matched(hit: Any, highlight: bool) -> str:
    """What matched in the frame, between a little of what is around it, escaped (a wire
    string: a newline or an escape sequence in it is shown, never acted on), highlighted
    on a terminal as grep does (bold red)."""
    if hit.match is None:
        return ""
    match = hit.match if len(hit.match) <= _SHOWN else hit.match[: _SHOWN - 1] + "…"
    from acp_proxy.readers.catalog import AROUND

    before = ("…" if len(hit.before) > AROUND else "") + visible(hit.before[-AROUND:])
    after = visible(hit.after[:AROUND]) + ("…" if len(hit.after) > AROUND else "")
    shown = visible(match)
    shown = click.style(shown, fg="red", bold=True) if highlight else shown
    return f"  {before}{shown}{after}"


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
