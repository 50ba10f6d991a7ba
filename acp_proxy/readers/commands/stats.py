"""``stats``: figures about recorded sessions (:mod:`acp_proxy.readers.stats`)."""

from __future__ import annotations

import click

from acp_proxy.clihelp import command, complete_path, format_option, stdout_lines
from acp_proxy.core.visible import dumps
from acp_proxy.readers.commands.shared import last_option, the_recordings


@command(
    short="Figures: traffic, methods, latency, turns.",
    examples=[
        "acp-proxy stats session.jsonl",
        "acp-proxy stats --format json out/*.jsonl",
        "acp-proxy stats --last",
    ],
)
@click.argument(
    "recordings", nargs=-1, required=False, metavar="RECORDING...", shell_complete=complete_path
)
@last_option
@format_option("How to print the figures.")
def stats(recordings: tuple[str, ...], last: bool, fmt: str) -> None:
    """Figures about recorded sessions: traffic, methods, latency, turns, findings.

    Exit status: 0 shown, 2 a recording that cannot be read."""
    import orjson

    recordings = the_recordings(recordings, last)

    from acp_proxy.readers.annotate import read
    from acp_proxy.readers.stats import Stats

    figures = Stats()
    for path in recordings:
        figures.recording = path
        figures.feed(read(path))
    with stdout_lines("never") as emit:
        if fmt == "json":
            emit(dumps(figures.as_json(), option=orjson.OPT_INDENT_2).decode())
        else:
            for line in figures.lines():
                emit(line)
