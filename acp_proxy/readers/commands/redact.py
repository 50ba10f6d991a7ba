"""``redact``: a copy of a recording safe to share (:mod:`acp_proxy.transcript.redact`)."""

from __future__ import annotations

import contextlib
import os

import click

from acp_proxy.clihelp import cannot_write, command, complete_path, say, stdout_lines
from acp_proxy.core.visible import visible
from acp_proxy.readers.commands.shared import last_option, same_file, the_recording


@command(
    short="A copy of a recording safe to share.",
    examples=[
        "acp-proxy redact session.jsonl -o shared.jsonl",
        "acp-proxy redact --contents session.jsonl -o -",
    ],
)
@click.argument("recording", required=False, metavar="RECORDING", shell_complete=complete_path)
@last_option
@click.option(
    "-o",
    "--output",
    metavar="OUT",
    required=True,
    shell_complete=complete_path,
    help="Where to write the copy (-: stdout).",
)
@click.option(
    "--contents",
    is_flag=True,
    help="Also replace file contents, resource contents, terminal output, prompt text (and "
    "its echoes: session titles) and what tool calls carry (content, rawInput, rawOutput) "
    "with their size and a tag.",
)
def redact(recording: str | None, last: bool, output: str, contents: bool) -> None:
    """Write a copy of RECORDING that is safe to attach to a bug report.

    \b
    Replaced by "[redacted:<tag>]" (the same value gets the same tag in the copy):
    the values of env and headers entries, authenticate / auth/login parameters,
    any field whose name looks like a token, key, secret, password, credential,
    cookie or authorization, secret-looking flags of the agent command, and in
    every string (stored findings too) API-key shapes, private key blocks, URL and
    curl -u passwords, secret headers, NAME=value secrets, base64 user:secret
    (docker auth, .npmrc _auth), short password flags (mysql -pX, sshpass -p X),
    and a key streamed across a message's chunks. A line that is no
    record is replaced by its size; a record with a key twice, as a reader reads it.
    Everything else stays byte for byte; frames that changed list the paths
    (`"redacted": [...]`). RECORDING - is standard input. The copy is written
    whole or not at all (an error or Ctrl-C leaves none).
    Exit status: 0 written, 2 unreadable recording.
    """
    import itertools

    from acp_proxy.files import open_output, whole
    from acp_proxy.transcript.reading import open_lines
    from acp_proxy.transcript.redact import redact_lines

    recording = the_recording(recording, last)
    to_stdout = output == "-"
    if recording != "-" and not to_stdout and same_file(output, recording):
        raise click.UsageError("the copy would overwrite the recording; give another -o")
    lines = open_lines(recording)  # (- is standard input)
    first = next(lines)  # says clearly if it is no transcript, before anything is written
    try:
        with contextlib.ExitStack() as stack:
            stack.callback(lines.close)  # (the recording closed on a failed write too)
            # the copy whole or not at all (files.whole): Ctrl-C leaves no half of it that
            # reads as a shorter recording; closed (flushed) before it is renamed into place
            target = output if to_stdout else stack.enter_context(whole(output))
            out = stack.enter_context(os.fdopen(open_output(target, dash=True), "wb"))
            records, changed = redact_lines(itertools.chain([first], lines), out, contents)
    except OSError as exc:
        cannot_write(output, exc)
    records_text = f"{records} record{'' if records == 1 else 's'}"
    if to_stdout:
        say(f"acp-proxy redact: {records_text}, {changed} redacted, to standard output")
        return
    with stdout_lines("never") as emit:
        emit(visible(f"{output}: {records_text}, {changed} redacted"))
        for line in _what_changed(output, changed):
            emit(visible(line))


#: Records whose redacted paths are listed after the summary (the rest are counted).
LISTED = 20


def _what_changed(output: str, changed: int) -> list[str]:
    """What a reviewer checks before sharing the copy: each redacted record's place in it
    (``OUT:LINE: seq N:``, grep's shape) and the paths replaced in it, from the copy itself
    (its ``"redacted"`` lists); the first :data:`LISTED`, then how many more."""
    import orjson

    said: list[str] = []
    if not changed:
        return said
    with contextlib.suppress(OSError), open(output, "rb") as copy:
        for number, line in enumerate(copy, 1):
            if b'"redacted":' not in line:
                continue
            with contextlib.suppress(orjson.JSONDecodeError):
                record = orjson.loads(line)
                paths = record.get("redacted") if isinstance(record, dict) else None
                if not isinstance(paths, list):
                    continue
                if len(said) == LISTED:
                    said.append(f"(and more: grep -n '\"redacted\"' {output} lists them all)")
                    break
                seq = record.get("seq")
                where = f"seq {seq}" if isinstance(seq, int) else str(record.get("kind"))
                said.append(f"{output}:{number}: {where}: {', '.join(map(str, paths))}")
    return said
