"""``test-agent``: be the agent a client talks to, and check the client
(:mod:`acp_proxy.drive.test_agent`)."""

from __future__ import annotations

import contextlib
import os

import click

from acp_proxy.clihelp import (
    NOT_A_RECORDING_PLACE,
    Seconds,
    command,
    complete_path,
    envvar,
    exit_with,
    no_effect,
    not_stdout,
    overruled,
    say,
    set_by,
    was_given,
)
from acp_proxy.core.visible import dumps, visible
from acp_proxy.log import configure, get_logger, open_log


@command(
    "test-agent",
    short="Be the agent a client talks to, and check the client.",
    examples=[
        "acp-proxy test-agent --report /tmp/client.txt   (as the client's agent command)",
        "acp-proxy test-agent --format json --report client.json --allow-write",
    ],
)
@click.option(
    "--report",
    metavar="FILE",
    callback=not_stdout("which carries the protocol: name a file"),
    help="Write the report here when the client is done (stdout carries the protocol; "
    "one summary line goes to stderr in any case).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "junit"]),
    default="text",
    show_default=True,
    help="The report's format: text, a line per check; json, one document; junit, a test "
    "case per check.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Warnings fail too (exit 1), as validate --strict: a broken SHOULD.",
)
@click.option(
    "--allow-write",
    is_flag=True,
    help="Ask the client to write a file (acp-proxy-test-agent.txt, in the session's cwd). "
    "Off by default: nothing is written.",
)
@click.option(
    "--timeout",
    type=Seconds(open_low=True, high=3600.0),
    default=30.0,
    show_default=True,
    help="Seconds the client gets for each answer, and to read what the agent writes "
    "(then the check fails, and the scenario asks nothing more).",
)
@click.option(
    "--record",
    metavar="PATH",
    shell_complete=complete_path,
    envvar=envvar("RECORD"),
    callback=not_stdout(NOT_A_RECORDING_PLACE),
    help="Where the session is recorded, as for run. Default: the recordings directory.",
)
@click.option("--no-record", is_flag=True, help="Do not record the session.")
@click.option(
    "--redact",
    is_flag=True,
    help="Record with secrets replaced by tags, as `run --redact` does.",
)
@click.option(
    "--addon",
    "addon_files",
    multiple=True,
    metavar="FILE[:NAME]",
    help="Also hand the session to addons of your own, as `run --addon` does. Repeatable.",
)
def test_agent(
    report: str | None,
    fmt: str,
    strict: bool,
    allow_write: bool,
    timeout: float,
    record: str | None,
    no_record: bool,
    redact: bool,
    addon_files: tuple[str, ...],
) -> None:
    """Be the agent a client (an editor, a plugin) talks to, and check the client: put
    `acp-proxy test-agent` where the agent command goes. Each prompt runs one scripted turn
    (every session update, a 1 MB chunk, a permission request, the client's files and
    terminal where it offers them) that ends with what passed and failed, in the chat. The
    session is recorded and validated as by run; stdout carries only the protocol.

    \b
    Each check has a basis and a level: a broken MUST fails, a broken SHOULD warns.
    Effects are checked, not answers: a written file is read back, the echo's output must
    hold the word it printed and its exit status be 0. fs-read reads the file a prompt
    names (an absolute path, or a resource_link): name one to have it checked.

    \b
    Exit status: 0 no check failed, 1 a check of the client failed (or, with --strict,
    warned), 2 usage."""
    no_record = no_record and not overruled("no_record", "record")  # (typed: it wins)
    if no_record and record is not None and was_given("record"):
        raise click.UsageError("--record and --no-record contradict each other")
    if report is None:
        no_effect("without --report", "fmt")
    if no_record:
        no_effect("with --no-record", "redact")
    from acp_proxy.live.session import user_addons

    addons = user_addons(addon_files)
    from acp_proxy.drive import test_agent as testing
    from acp_proxy.files import open_output

    out = None
    if report is not None:
        try:
            out = open_output(report)
        except OSError as exc:
            why = f"{exc.strerror or exc}{set_by('report')}"
            say(f"acp-proxy test-agent: cannot write {report}: {why}")
            exit_with(2)
    configure("warning", "console", open_log(None))
    if allow_write:
        say("acp-proxy test-agent: --allow-write: the client will be asked to write a file")
    with contextlib.suppress(OSError, ValueError):
        if os.isatty(0):  # (a person typing, not a client: what it is for, not silence)
            say(
                "acp-proxy test-agent: speaks ACP on stdin and stdout, for a client: name "
                "`acp-proxy test-agent` as the agent command in it (Ctrl-C stops)"
            )
    options = testing.Options(allow_write=allow_write, timeout=timeout, strict=strict)
    try:
        result = testing.serve(
            options, get_logger(), record=record, no_record=no_record, redact=redact,
            addons=addons,
        )  # fmt: skip
    except KeyboardInterrupt:
        exit_with(130)
    if out is not None:
        if fmt == "json":
            import orjson

            text = dumps(result.as_json(), option=orjson.OPT_INDENT_2).decode() + "\n"
        elif fmt == "junit":
            text = result.junit()
        else:
            text = "".join(visible(line) + "\n" for line in result.text_lines())
        with os.fdopen(out, "w", encoding="utf-8") as stream:
            stream.write(text)
    say(f"acp-proxy test-agent: {result.summary()}")
    exit_with(1 if result.failed else 0)
