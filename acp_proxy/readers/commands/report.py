"""``report``: a recording as one self-contained HTML page (:mod:`acp_proxy.readers.report`)."""

from __future__ import annotations

import contextlib
from pathlib import Path

import click

from acp_proxy.clihelp import cannot_write, command, complete_path, say, stdout_lines
from acp_proxy.core.visible import visible
from acp_proxy.readers.commands.shared import last_option, same_file, the_recording


@command(
    short="A recording as one self-contained HTML page.",
    examples=[
        "acp-proxy report session.jsonl",
        "acp-proxy report session.jsonl -o - | gzip > s.html.gz",
    ],
)
@click.argument("recording", required=False, metavar="RECORDING", shell_complete=complete_path)
@last_option
@click.option(
    "-o",
    "--output",
    metavar="OUT.html",
    shell_complete=complete_path,
    help="Where to write the page (-: stdout). Default: the recording's path with .html "
    "(from stdin, RECORDING -, -o is needed).",
)
@click.option(
    "--revalidate",
    is_flag=True,
    help="Also run today's rules and mark the findings that differ from the stored ones.",
)
@click.option(
    "--against",
    metavar="A.jsonl",
    help="Also list what differs from this recording (as `acp-proxy diff A RECORDING`), each "
    "difference linked to its row.",
)
def report(
    recording: str | None, last: bool, output: str | None, revalidate: bool, against: str | None
) -> None:
    """Write RECORDING as one self-contained HTML page: the sequence of frames with their
    findings and bytes, the conversation, and the stats. It opens offline (nothing is fetched),
    so it can be attached to a bug report.

    Exit status: 0 written, 1 the page cannot be written, 2 an unreadable recording.
    """
    from acp_proxy.files import whole

    recording = the_recording(recording, last)
    from acp_proxy.readers.report import write_report

    if recording == "-" and output is None:
        raise click.UsageError(
            "standard input has no name to make the page's from: give -o OUT.html, or -o - "
            "for standard output"
        )
    out = output or str(Path(recording).with_suffix(".html"))
    if out != "-" and recording != "-" and same_file(out, recording):
        raise click.UsageError("the output would overwrite the recording; give -o OUT.html")
    try:
        with contextlib.ExitStack() as stack:
            # the page whole or not at all (files.whole): Ctrl-C leaves no half of it
            target = out if out == "-" else stack.enter_context(whole(out))
            size = write_report(recording, target, revalidate=revalidate, against=against)
    except OSError as exc:
        cannot_write(out, exc)
    if out == "-":
        say(f"acp-proxy report: {size:,} bytes written to standard output")
        return
    with stdout_lines("never") as emit:
        emit(visible(f"{out} ({size:,} bytes)"))
