"""Command-line interface: argument parsing and exit statuses only."""

from __future__ import annotations

import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import click

from . import __version__
from .log import LEVELS, configure, get_logger
from .observer import Observer
from .recorder import Recorder, default_record_dir, resolve_record_path
from .validator import Validator

__all__ = ["main"]

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
def main() -> None:
    """A transparent proxy for the Agent Client Protocol (ACP).

    It relays an agent's stdio unchanged, records every session to a JSONL
    transcript and flags violations of the ACP v2 prompt lifecycle.
    """
    # Anything that logs before a command configures it must not reach stdout.
    configure("warning", "console")


@main.command(context_settings={"allow_interspersed_args": False})
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
@_logging_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
def run(
    record: str | None,
    no_record: bool,
    grace: float,
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
    observer = Observer(recorder, log, Validator())

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


@main.command()
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
