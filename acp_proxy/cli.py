"""Command-line interface: argument parsing and exit statuses only."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

import click

from . import __version__
from .log import LEVELS, configure, get_logger
from .observer import Observer
from .recorder import Recorder, default_record_dir, resolve_record_path
from .validator import Validator

if TYPE_CHECKING:
    from .transcript import Record

__all__ = ["cli", "main"]

#: Exit statuses of ``run`` when the agent cannot be started (as a shell does).
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126


def _open_log(log_file: str | None) -> TextIO | None:
    if not log_file:
        return None
    try:
        return open(log_file, "a", buffering=1, encoding="utf-8")
    except OSError as exc:
        click.echo(
            f"acp-proxy: cannot open log file {log_file}: {exc.strerror}; logging to stderr",
            err=True,
        )
        return None


def _env(name: str) -> str:
    return f"ACP_PROXY_{name}"


def _logging_options(func: Any) -> Any:
    func = click.option(
        "--log-format",
        type=click.Choice(["console", "json"]),
        default="console",
        show_default=True,
        envvar=_env("LOG_FORMAT"),
        help="Format of log lines.",
    )(func)
    func = click.option(
        "--log-level",
        type=click.Choice(LEVELS, case_sensitive=False),
        default="info",
        show_default=True,
        envvar=_env("LOG_LEVEL"),
        help="Least severe level logged. 'debug' logs every frame.",
    )(func)
    func = click.option(
        "--log-file",
        type=click.Path(dir_okay=False),
        envvar=_env("LOG_FILE"),
        help="Append logs to this file instead of stderr.",
    )(func)
    return func


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="acp-proxy")
def cli() -> None:
    """A transparent proxy for the Agent Client Protocol (ACP).

    It relays an agent's stdio unchanged, records every session to a JSONL
    transcript and flags violations of the ACP v2 prompt lifecycle.
    """
    # Anything that logs before a command configures it must not reach stdout.
    configure("warning", "console")


@cli.command(context_settings={"allow_interspersed_args": False})
@click.option(
    "--record",
    "record",
    metavar="PATH",
    envvar=_env("RECORD"),
    help="Directory (or path ending in /) for a new file per session, or a file to append to. "
    "Default: $ACP_PROXY_RECORD_DIR, else $XDG_STATE_HOME/acp-proxy/recordings, "
    "else ~/.local/state/acp-proxy/recordings.",
)
@click.option(
    "--no-record", is_flag=True, envvar=_env("NO_RECORD"), help="Do not record the session."
)
@click.option(
    "--grace",
    type=click.FloatRange(min=0),
    default=5.0,
    show_default=True,
    envvar=_env("GRACE"),
    help="Seconds the agent gets to exit after its stdin closes, before SIGTERM, "
    "and again before SIGKILL.",
)
@click.option(
    "--notify-client",
    is_flag=True,
    envvar=_env("NOTIFY_CLIENT"),
    help="Also tell the user in their editor: insert a live-only notice into the agent's "
    "stream for each rule a v2 session breaks (once per rule per session).",
)
@_logging_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(
    record: str | None,
    no_record: bool,
    grace: float,
    notify_client: bool,
    log_file: str | None,
    log_level: str,
    log_format: str,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND (the agent) and relay its stdio, recording the session.

    \b
    Example:
      acp-proxy run -- my-agent --acp
    """
    from .relay import AgentNotExecutable, AgentNotFound, run_relay

    configure(log_level.lower(), log_format, _open_log(log_file))
    log = get_logger()
    argv = list(command)
    recorder = Recorder(None, log)
    observer = Observer(recorder, log, Validator(), notify_client=notify_client)

    def on_start(pid: int) -> None:
        if not no_record:
            recorder.path = resolve_record_path(record, pid)
            recorder.open(argv, pid)

    try:
        result = run_relay(argv, observer, log, grace=grace, on_start=on_start)
    except AgentNotFound:
        click.echo(f"acp-proxy: agent command not found: {argv[0]}", err=True)
        sys.exit(EXIT_NOT_FOUND)
    except AgentNotExecutable as exc:
        click.echo(f"acp-proxy: agent command cannot be executed: {exc}", err=True)
        sys.exit(EXIT_NOT_EXECUTABLE)
    observer.finish(result.returncode, result.reason)
    sys.exit(result.exit_status)


class RecordingError(click.ClickException):
    """A recording that cannot be read: exit status 2, one clear line."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        click.echo(f"acp-proxy: {self.message}", err=True)


def open_recording(path: str) -> Iterator[Record]:
    """Stream the records of a recording.

    Raises :class:`RecordingError` if it cannot be opened, or if its first line
    is not a record (it is not a transcript). A bad line later on, such as the
    truncated last line a crash leaves, comes through as an ``UnreadableLine``.
    """
    from .transcript import UnreadableLine, iter_records

    try:
        stream = open(path, "rb")  # noqa: SIM115 - closed by the generator
    except OSError as exc:
        raise RecordingError(f"cannot read {path}: {exc.strerror}") from None

    def records() -> Iterator[Record]:
        with stream:
            try:
                for index, record in enumerate(iter_records(stream)):
                    if index == 0 and isinstance(record, UnreadableLine):
                        raise RecordingError(f"{path} is not an acp-proxy transcript")
                    yield record
            except OSError as exc:
                raise RecordingError(f"cannot read {path}: {exc.strerror}") from None

    return records()


@cli.command()
@click.argument("recordings", nargs=-1, required=True, metavar="RECORDING...")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="text: FILE:SEQ: LEVEL RULE: MESSAGE lines; json: one object per finding.",
)
def validate(recordings: tuple[str, ...], fmt: str) -> None:
    """Re-run the validator over recorded sessions and print the findings.

    Stored findings are ignored and recomputed; a file with several sessions
    appended is validated session by session. Exit status: 0 no error-level
    finding, 1 at least one, 2 a file that cannot be read.
    """
    import orjson

    from .offline import validate_records

    errors = 0
    unreadable = False
    for path in recordings:
        try:
            for finding in validate_records(open_recording(path)):
                errors += finding.level == "error"
                if fmt == "json":
                    row = {"file": path, "seq": finding.seq, **finding.as_dict()}
                    click.echo(orjson.dumps(row).decode())
                else:
                    seq = "-" if finding.seq is None else finding.seq
                    click.echo(f"{path}:{seq}: {finding.level} {finding.rule}: {finding.message}")
        except RecordingError as exc:
            exc.show()
            unreadable = True
    sys.exit(2 if unreadable else 1 if errors else 0)


@cli.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="How to print the catalog.",
)
def rules(fmt: str) -> None:
    """Print the catalog of rules the validator checks."""
    import orjson

    from .rules import CATALOG

    if fmt == "json":
        for rule in CATALOG:
            row = {
                "rule": rule.id,
                "level": str(rule.level),
                "spec": rule.spec,
                "versions": str(rule.scope),
                "description": rule.description,
            }
            click.echo(orjson.dumps(row).decode())
        return
    if fmt == "markdown":
        click.echo("| rule | level | versions | spec | description |")
        click.echo("| --- | --- | --- | --- | --- |")
        for rule in CATALOG:
            description = rule.description.replace("|", "\\|")
            click.echo(
                f"| `{rule.id}` | {rule.level} | {rule.scope} | {rule.spec} | {description} |"
            )
        return
    width = max(len(rule.id) for rule in CATALOG)
    spec_width = max(len(rule.spec) for rule in CATALOG)
    for rule in CATALOG:
        click.echo(
            f"{rule.id:<{width}}  {rule.level:<7}  {rule.scope:<3}  "
            f"{rule.spec:<{spec_width}}  {rule.description}"
        )


@cli.command()
@click.option(
    "--record",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Where to write the demo's transcript. Default: a new file in the recordings directory.",
)
@click.option(
    "--delay",
    type=click.FloatRange(min=0),
    default=0.02,
    show_default=True,
    help="Seconds between the example agent's streamed chunks.",
)
def demo(record: str | None, delay: float) -> None:
    """Try the proxy: run the example agent behind it and drive one session.

    Nothing else needs to be installed: the agent and the client are both
    part of acp-proxy.
    """
    from .demo import run_demo

    if record is None:
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
        path = default_record_dir() / f"{stamp}-demo.jsonl"
    else:
        path = Path(record)
    click.echo(
        f"acp-proxy demo: the example agent runs behind `acp-proxy run`; recording to {path}"
    )
    click.echo()
    try:
        status = run_demo(path, delay=delay)
    except (OSError, EOFError, ValueError, KeyError) as exc:
        click.echo(f"acp-proxy demo: the session failed: {exc}", err=True)
        sys.exit(1)
    click.echo()
    if not path.exists():
        click.echo(f"The proxy exited with status {status}; no transcript was written.")
        sys.exit(1)
    size = path.stat().st_size
    with open(path, "rb") as stream:
        lines = sum(1 for _ in stream)
    click.echo(f"The proxy exited with status {status}.")
    click.echo(f"Transcript: {path} ({lines} records, {size} bytes)")
    click.echo("Read it with:")
    click.echo(f"  jq -c 'select(.kind == \"frame\") | [.seq, .from, .msg.method]' {path}")
    sys.exit(status)


def main() -> None:
    """Entry point: the click group, plus a quiet exit when stdout is closed early.

    ``acp-proxy validate big.jsonl | head`` closes our stdout; that is not an
    error worth a traceback.
    """
    try:
        cli(standalone_mode=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
