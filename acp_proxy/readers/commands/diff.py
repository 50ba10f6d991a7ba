"""``diff``: what changed between two recorded sessions (:mod:`acp_proxy.readers.diff`)."""

from __future__ import annotations

import sys

import click

from acp_proxy.clihelp import (
    Seconds,
    Unreadable,
    color_option,
    command,
    complete_path,
    format_option,
    no_effect,
    pager_option,
    stdout_lines,
)
from acp_proxy.core.visible import dumps, visible
from acp_proxy.readers.commands.shared import connection_number, connection_options


def _layers(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    from acp_proxy.readers.diff import LAYERS

    if value is None:
        return LAYERS
    chosen = tuple(part.strip() for part in value.split(",") if part.strip())
    unknown = [part for part in chosen if part not in LAYERS]
    if unknown or not chosen:
        raise click.BadParameter(
            f"{', '.join(unknown) or value!r}: choose from {', '.join(LAYERS)}"
        )
    return chosen


@command(
    short="What changed between two recorded sessions.",
    examples=[
        "acp-proxy diff before.jsonl after.jsonl",
        "acp-proxy diff --only conversation,findings a.jsonl b.jsonl",
        "acp-proxy diff --session sess_0001 --format json a.jsonl b.jsonl",
    ],
)
@click.argument("a", metavar="A", shell_complete=complete_path)
@click.argument("b", metavar="B", shell_complete=complete_path)
@format_option("text: grouped by layer and turn; json: one document, for tools.")
@click.option(
    "--only",
    "only",
    callback=_layers,
    metavar="LAYERS",
    help="Compare only these layers (comma-separated): handshake, conversation, wire, "
    "findings, timing.",
)
@connection_options(" (the same number on both sides)")
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="PATH",
    help="A field to leave out, as replay --ignore takes it: params.update.content.text "
    "(repeatable).",
)
@click.option("--meta", is_flag=True, help="Compare _meta too (left out by default).")
@click.option(
    "--slower",
    type=Seconds(low=1.0, high=1000.0, open_low=True),
    default=1.5,
    show_default=True,
    help="Timing: flag a median only this many times slower or faster (and 50 ms apart).",
)
@click.option(
    "--timing",
    "timing_counts",
    is_flag=True,
    help="Count timing differences in the exit status (by default they are shown, not "
    "counted: two runs of one scenario differ in pace); --only timing counts them too.",
)
@color_option("Colour the layers' headings")
@pager_option
def diff(
    a: str,
    b: str,
    fmt: str,
    only: tuple[str, ...],
    connection: int | None,
    session_id: str | None,
    ignore: tuple[str, ...],
    meta: bool,
    slower: float,
    timing_counts: bool,
    color: str,
) -> None:
    """What changed between two recorded sessions, A and B: the handshake, the conversation,
    the wire, the findings and the timing. Ids and times are normalised first, so two runs of
    one scenario compare equal.

    Exit status, as diff(1): 0 no layer differs, 1 they differ, 2 a file cannot be read.
    Timing is shown but makes no difference unless asked (--timing, or --only timing).
    """
    import orjson

    from acp_proxy.readers.diff import compare, lines, load

    if fmt == "json":
        no_effect("with --format json", "color", "no_color")
    if "timing" not in only:
        no_effect("without timing in --only", "slower", "timing_counts")
    from acp_proxy.clihelp import was_given

    timing_counts = timing_counts or (was_given("only") and "timing" in only)
    sides = []
    numbers = [connection_number(path, connection, session_id) for path in (a, b)]
    session = numbers[0] if numbers[0] == numbers[1] else numbers
    for path, number in zip((a, b), numbers, strict=True):
        try:
            sides.append(load(path, number, ignore, meta))
        except ValueError as exc:
            raise Unreadable(str(exc)) from None
    found = compare(sides[0], sides[1], only, slower)
    counted = [d for d in found if timing_counts or d.layer != "timing"]
    with stdout_lines(color) as emit:
        if fmt == "json":
            document = {
                "a": a,
                "b": b,
                "session": session,
                "sessions": {"a": sides[0].connections, "b": sides[1].connections},
                "identical": not counted,
                "timing_counted": timing_counts,
                "differences": [d.as_json() for d in found],
            }
            emit(dumps(document, option=orjson.OPT_INDENT_2).decode())
        else:
            for line in lines(found, (sides[0].connections, sides[1].connections)):
                styled = line.endswith(":") and not line.startswith(" ")
                emit(click.style(visible(line), bold=True) if styled else visible(line))
                if line == "timing:" and not timing_counts:
                    emit("  (shown, not counted as a difference: --timing counts it)")
    sys.exit(1 if counted else 0)
