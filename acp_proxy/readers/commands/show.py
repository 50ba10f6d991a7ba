"""``show``: a recording as a timeline (:mod:`acp_proxy.readers.text`), one frame whole, or the
conversation (:mod:`acp_proxy.readers.conversation`)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from acp_proxy.clihelp import (
    command,
    complete_path,
    json_format_option,
    no_effect,
    pager_option,
    say,
    stdout_lines,
    use_color,
    wants_json,
)
from acp_proxy.core.visible import dumps, visible
from acp_proxy.readers.commands.shared import last_option, the_recording, timeline_filter_options


@command(
    short="A recording as a timeline or as the conversation.",
    examples=[
        "acp-proxy show session.jsonl",
        "acp-proxy show --violations --from agent session.jsonl",
        "acp-proxy show --last --conversation",
    ],
)
@click.argument("recording", required=False, metavar="RECORDING", shell_complete=complete_path)
@last_option
@click.option(
    "--conversation",
    is_flag=True,
    help="Show the session as a client would render it, turn by turn.",
)
@json_format_option("json: the conversation's reconstructed state (implies --conversation).")
@click.option(
    "--revalidate",
    is_flag=True,
    help="Recompute the findings with today's rules (as validate does) instead of showing the "
    "ones stored in the recording.",
)
@click.option(
    "--seq",
    type=click.IntRange(min=1),
    metavar="N",
    help="Only frame N, whole: where it is, its JSON pretty-printed, its findings.",
)
@click.option(
    "--fold/--no-fold",
    default=True,
    show_default=True,
    help="Timeline: the consecutive text chunks of one message as one line (x31, the seqs, "
    "the text joined); --no-fold: a line per chunk.",
)
@timeline_filter_options
@pager_option
def show(
    recording: str | None,
    last: bool,
    conversation: bool,
    fmt: str,
    legacy_json: bool,
    revalidate: bool,
    seq: int | None,
    fold: bool,
    side: str | None,
    method: str | None,
    session: str | None,
    violations: bool,
    color: str,
) -> None:
    """Show a recording as a timeline (default) or as the conversation.

    \b
    The timeline has a line per frame: time since the start, seq, direction,
    request / response / notify, the method and a summary; findings right
    under their frame, as stored in the recording (--revalidate: recomputed).

    \b
    Exit status: 0 shown, 1 --seq names no frame, 2 an unreadable recording.
    """
    recording = the_recording(recording, last)
    as_json = wants_json(fmt, legacy_json)
    import orjson

    from acp_proxy.readers.annotate import read
    from acp_proxy.readers.conversation import Conversation
    from acp_proxy.readers.summary import TimelineFilter
    from acp_proxy.readers.text import Timeline

    # (each option named as the user wrote it)
    as_typed = "--json" if legacy_json else "--format json"
    view = "--conversation" if conversation else as_typed
    if seq is not None:
        if conversation or as_json:
            raise click.UsageError(f"--seq shows one frame: not with {view}")
        no_effect("with --seq", "side", "method", "session", "violations", "fold")
        _show_frame(recording, seq, revalidate, color)
        return
    if conversation or as_json:
        from acp_proxy.readers.text import conversation_lines

        # The conversation is the session's state, as a client renders it: no frames to keep
        # by side or method, no findings (so none to recompute); --session picks one.
        no_effect(f"with {view}", "side", "method", "violations", "revalidate", "fold")
        if as_json:
            no_effect(f"with {as_typed}", "color", "no_color")

        # the whole file is read before anything is shown
        connections = Conversation.per_connection(read(recording, validate=False))
        if as_json:
            document = Conversation.document(connections, session)
            with stdout_lines("never") as emit:
                emit(dumps(document, option=orjson.OPT_INDENT_2).decode())
            return
        with stdout_lines(color) as emit:
            for line in conversation_lines(connections, session):
                emit(line)
        return
    only = TimelineFilter(side, method, session, violations)
    # A regular file is read to its end without waiting: lines go out in blocks. From a
    # pipe, each line goes out as soon as it is read (read() says which).
    items = read(recording, stored=not revalidate)
    with stdout_lines(color, live=not Path(recording).is_file()) as emit:
        Timeline(emit, only, use_color(color), fold=fold).feed(items)


def _show_frame(recording: str, seq: int, revalidate: bool, color: str) -> None:
    """``show --seq N``: frame N of each connection, whole; exit 1 if there is none."""
    import orjson

    from acp_proxy.readers.annotate import plain, read
    from acp_proxy.transcript.records import FrameRecord

    found = False
    with stdout_lines(color) as emit:
        for item in plain(read(recording, stored=not revalidate)):
            record = item.record
            if not isinstance(record, FrameRecord) or record.seq != seq:
                continue
            found = True
            arrow = "client → agent" if record.side == "client" else "agent → client"
            where = f"{recording}:{record.line}: seq {seq}, {arrow}, {record.t}"
            emit(click.style(visible(f"{where}, connection {item.connection}"), bold=True))
            frame = record.frame
            if frame.is_json:
                body = dumps(frame.value, option=orjson.OPT_INDENT_2).decode()
            elif frame.utf8:
                body = "(not JSON) " + visible(frame.raw.decode())
            else:
                body = f"(not UTF-8, {len(frame.raw)} bytes) {frame.raw.hex(' ')}"
            for line in body.splitlines():
                emit(line)
            for finding in item.findings:
                said = f"  {finding.level} {finding.rule}: {finding.message} ({finding.spec})"
                emit(click.style(visible(said), fg="red" if finding.level == "error" else "yellow"))
    if not found:
        say(f"acp-proxy: {recording} has no frame with seq {seq}")
        sys.exit(1)
