"""``follow``: a recording shown live as it grows (:mod:`acp_proxy.readers.follow`)."""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import click

from acp_proxy.clihelp import (
    Seconds,
    Unreadable,
    command,
    complete_path,
    say,
    stdout_lines,
    use_color,
)
from acp_proxy.core.visible import visible
from acp_proxy.readers.commands.shared import last_option, the_recording, timeline_filter_options


@command(
    short="Show a recording live as it grows (tail -f).",
    examples=[
        "acp-proxy follow                    (the recordings directory)",
        "acp-proxy follow --last",
        "acp-proxy follow --violations session.jsonl",
    ],
)
@click.argument("path", required=False, metavar="[PATH]", shell_complete=complete_path)
@functools.partial(last_option, instead="PATH")
@timeline_filter_options
@click.option(
    "--revalidate",
    is_flag=True,
    help="Recompute the findings with today's rules instead of showing the recorded ones.",
)
@click.option(
    "--interval",
    type=Seconds(low=0.01, high=3600.0),
    default=0.2,
    show_default=True,
    help="Seconds between checks for new records.",
)
def follow(
    path: str | None,
    last: bool,
    side: str | None,
    method: str | None,
    session: str | None,
    violations: bool,
    color: str,
    revalidate: bool,
    interval: float,
) -> None:
    """Show a recording live, as frames are appended (tail -f for ACP).

    PATH may be a recording, or a directory: then the newest recording in it is
    followed, and each new one as new sessions start (default: the recordings
    directory, waited for if no session made it yet); or - for standard input,
    shown as it arrives, to its end. Ctrl-C stops. Exit status: 2 when PATH is
    no recording (an empty file is waited on: a recording being written).
    """
    from acp_proxy.readers.annotate import read
    from acp_proxy.readers.follow import follow_lines, follow_stream
    from acp_proxy.readers.summary import TimelineFilter
    from acp_proxy.readers.text import Timeline
    from acp_proxy.transcript.reading import RecordingError, refuse_device

    if path is None and not last:
        path = str(_recordings_directory())
    path = the_recording(path, last)
    target = Path(path)
    if path == "-":
        refuse_device(sys.stdin.fileno(), "standard input")  # (as the other readers)
    elif not target.exists():
        raise Unreadable(visible(f"cannot follow {path}: No such file or directory"))
    only = TimelineFilter(side, method, session, violations)

    def refused(exc: RecordingError) -> None:
        say(f"acp-proxy: {exc}; waiting for the next recording")

    def waiting(directory: Path) -> None:
        say(visible(f"acp-proxy: waiting for a recording to appear in {directory}"))

    try:
        with stdout_lines(color, live=True) as emit:
            timeline = Timeline(emit, only, use_color(color))

            def switched(current: Path) -> None:
                emit(click.style(visible(f"==> following {current}"), bold=True))

            if path == "-":
                stdin = open(sys.stdin.fileno(), "rb", buffering=0, closefd=False)  # noqa: SIM115
                lines = follow_stream(stdin)
            else:
                lines = follow_lines(
                    target, switched, interval, on_refused=refused, check=True, on_waiting=waiting
                )
            timeline.feed(read(lines, stored=not revalidate))
    except BrokenPipeError:
        raise  # stdout closed by its reader (| head): the quiet exit of cli.main
    except OSError as exc:
        raise Unreadable(visible(f"cannot follow {path}: {exc.strerror}")) from None
    except RecordingError as exc:
        raise Unreadable(str(exc)) from None


def _recordings_directory() -> Path:
    """The recordings directory, made (as a session would make it) if no session did yet:
    ``follow`` in a second pane before the first session waits for it, as ``tail -F``."""
    import contextlib

    from acp_proxy.transcript.names import default_record_dir

    directory = default_record_dir()
    with contextlib.suppress(OSError):  # (if it cannot be made, following it says why)
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    return directory
