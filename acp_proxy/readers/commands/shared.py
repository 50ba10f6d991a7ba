"""What the readers' commands share, named for what it does: which recordings to look at
(:func:`where_to_look`) and the ones that could not be taken (:func:`say_unlisted`), which
frames (:func:`timeline_filter_options`), which recorded session of a file
(:func:`connection_options`, :func:`connection_number`; replay's too), and whether an output
would replace its recording (:func:`same_file`)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from acp_proxy.clihelp import Unreadable, color_option, say, warn_deprecated


def same_file(output: str, recording: str) -> bool:
    """Whether writing ``output`` would replace ``recording``: the same path, or the same
    file under another name (a symlink, a hard link)."""
    try:
        return os.path.samefile(output, recording)
    except OSError:  # (one of them does not exist yet)
        return Path(output).resolve() == Path(recording).resolve()


def where_to_look(paths: tuple[str, ...]) -> tuple[str, ...]:
    """What ``ls`` and ``search`` look at: the paths given, else the recordings directory;
    none when that directory is not made yet (no session was recorded: no recordings, no
    error). A directory the user names that does not exist stays an error."""
    from acp_proxy.transcript.names import default_record_dir

    if paths:
        return paths
    default = default_record_dir()
    return (str(default),) if os.path.lexists(default) else ()


def say_unlisted(problems: list[Any], targets: tuple[str, ...]) -> bool:
    """Say each file ``ls`` or ``search`` could not take; whether one fails the command (exit
    2, as grep's unreadable file, even when others matched): a file named that cannot be
    read or is no recording, and any file that cannot be read (a session may be in it). A
    file found in a directory that is no recording is said and does not fail it; an empty
    one there is not even said (a session starting writes its start record next)."""
    named = {Path(t) for t in targets if t == "-" or not Path(t).is_dir()}
    failed = False
    for problem in problems:
        if problem.path in named or problem.unreadable:
            failed = True
        elif problem.empty:
            continue
        say(f"acp-proxy: {problem}")
    return failed


def timeline_filter_options(func: Any) -> Any:
    """Which frames a timeline shows (``show``, ``follow``): ``--from``, ``--method``,
    ``--session``, ``--violations``; and ``--color``."""
    func = color_option("Colour findings and directions")(func)
    func = click.option(
        "--violations", is_flag=True, help="Only frames with findings, and standalone findings."
    )(func)
    func = click.option("--session", metavar="ID", help="Only frames of this session.")(func)
    func = click.option(
        "--method",
        metavar="PATTERN",
        help="Only frames of methods matching this glob (a response matches its request's).",
    )(func)
    func = click.option(
        "--from",
        "side",
        type=click.Choice(["client", "agent"]),
        help="Only frames sent by this side.",
    )(func)
    return func


def connection_options(which: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--connection N`` and ``--session ID``: which recorded session of a file to take."""

    def add(func: Any) -> Any:
        func = click.option(
            "--session",
            "session_id",
            metavar="ID",
            help="The recorded session holding ACP session ID (as show --session ID); "
            "a number is the older spelling of --connection (deprecated).",
        )(func)
        return click.option(
            "--connection",
            type=click.IntRange(min=1),
            metavar="N",
            help=f"Which recorded session of a file with several: 1 is the first{which}. "
            "Default: 1.",
        )(func)

    return add


def connection_number(path: str, connection: int | None, session_id: str | None) -> int:
    """The connection ``--connection`` or ``--session`` names in ``path`` (default: 1)."""
    if session_id is None:
        return connection or 1
    if connection is not None:
        raise click.UsageError("give --connection N or --session ID, not both")
    if session_id.isdigit():
        warn_deprecated(f"--session {session_id}", f"--connection {session_id}")
        return int(session_id)
    from acp_proxy.readers.annotate import connection_of

    number = connection_of(path, session_id)
    if number is None:
        raise Unreadable(f"{path} has no session {session_id}")
    return number


def last_option(func: Any, instead: str = "RECORDING") -> Any:
    """``--last``: the newest recording of the recordings directory, in place of RECORDING
    (:func:`the_recording`)."""
    return click.option(
        "--last",
        is_flag=True,
        help="The newest recording of the recordings directory (the session started last, "
        f"as ls lists it first), in place of {instead}.",
    )(func)


def the_recording(given: str | None, last: bool) -> str:
    """RECORDING as given, or with ``--last`` the newest one; one of the two is needed. A
    RECORDING typed wins over ``ACP_PROXY_LAST`` (only a typed ``--last`` contradicts it)."""
    if last:
        if given is not None:
            from acp_proxy.clihelp import was_given

            if was_given("last"):
                raise click.UsageError("give RECORDING or --last, not both")
            return given
        return newest_recording()
    if given is None:
        raise click.UsageError("missing argument 'RECORDING' (or --last: the newest recording)")
    return given


def the_recordings(given: tuple[str, ...], last: bool) -> tuple[str, ...]:
    """RECORDING... as given, or with ``--last`` the newest one."""
    return (the_recording(None, last),) if last or not given else given


def newest_recording() -> str:
    """The recording of the recordings directory whose session started last: of the files
    the proxy named (by their start), the last; else the one written last. None there is
    exit 2, saying where it looked."""
    from acp_proxy.transcript.names import PROXY_NAME, default_record_dir

    directory = default_record_dir()
    try:
        files = [p for p in directory.iterdir() if p.suffix == ".jsonl" and p.is_file()]
    except OSError:
        files = []
    named = [p for p in files if PROXY_NAME.match(p.name)]
    if named:
        return str(max(named, key=lambda p: p.name))
    if files:
        return str(max(files, key=lambda p: p.stat().st_mtime_ns))
    raise Unreadable(f"--last: no recording in {directory} yet (run records there)")
