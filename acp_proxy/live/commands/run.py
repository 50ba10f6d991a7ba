"""``run``: its options, and the assembly of a session: the agent started first (before
click is loaded, by ``acp_proxy.__main__``), then the relay at once, while the observer,
the validator and the recorder load in a thread (:mod:`acp_proxy.live.later`)."""

from __future__ import annotations

import contextlib
import functools
import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from acp_proxy.clihelp import (
    EXIT_NOT_EXECUTABLE,
    EXIT_NOT_FOUND,
    EXIT_PROXY_FAILED,
    NOT_A_RECORDING_PLACE,
    Seconds,
    as_size,
    command,
    complete_path,
    envvar,
    exempt_from_gc,
    exit_with,
    logging_options,
    no_effect,
    not_found,
    not_stdout,
    overruled,
    say,
    use_color,
)
from acp_proxy.log import Logger, configure, get_logger, open_log

if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable

    from acp_proxy.live.observer import Observer
    from acp_proxy.otlp.send import Target
    from acp_proxy.transcript.items import Addon


def _start_inspector(path: Path, log: Logger) -> subprocess.Popen[bytes] | None:
    """``run --inspect``: ``acp-proxy inspect`` for this recording, in its own process (serving
    a page must never slow the relay), which stops when the proxy does; its URL goes to our
    stderr (stdout belongs to the protocol)."""
    import subprocess

    command = [
        sys.executable,
        "-m",
        "acp_proxy",
        "inspect",
        "--parent",
        str(os.getpid()),
        str(path),
    ]
    try:
        return subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, start_new_session=True
        )
    except OSError as exc:
        log.warning("could not start the inspector", error=repr(exc))
        return None


def _observer(
    argv: list[str],
    pid: int,
    log: Logger,
    *,
    started: str,
    record: str | None,
    no_record: bool,
    redact: bool,
    record_stderr: bool,
    notify_client: bool,
    keep_days: float | None,
    keep_size: int | None,
    inspect_live: bool,
    inspector: list[subprocess.Popen[bytes] | None],
    addons: list[Addon],
    views: list[Addon],
) -> Observer:
    """``run``'s observer and its parts (the transcript, the validator, the live log, the
    findings log, the notices, our own ``views``: the OTLP export, off the relay already,
    then the user's ``addons``), loaded and built while the relay runs; the recordings
    tidied (``--keep-*``), the page served (``--inspect``: the process, to ``inspector``)."""
    from acp_proxy.live.session import Recording, assemble

    recording = Recording(record, no_record, redact, record_stderr, addons)
    observer = assemble(
        log, argv, pid, recording, started=started, notify_client=notify_client, parts=views
    )
    recorder = observer.recorder
    if record is None and (keep_days is not None or keep_size is not None):
        _tidy_recordings(log, keep_days, keep_size)
    if inspect_live and recorder.path is not None:
        inspector.append(_start_inspector(recorder.path, log))
    exempt_from_gc()
    return observer


def _otlp_target(endpoint: str | None, content: bool) -> Target | None:
    """``--otlp``: where the spans go (a value that cannot be used: exit 2)."""
    if endpoint is None:
        no_effect("without --otlp", "otlp_content")
        return None
    from acp_proxy.otlp.send import target

    try:
        return target(endpoint)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="'--otlp'") from None


def _with_otlp(
    parts: Callable[[], Observer], views: list[Addon], where: Target, log: Logger,
    started: tuple[str, int | None], content: bool, redact: bool, recorded: bool,
) -> Callable[[], Observer]:  # fmt: skip
    """``parts``, the OTLP view (:mod:`acp_proxy.live.otlp`) added to ``views`` first."""

    def assemble() -> Observer:
        from acp_proxy.live.otlp import LiveExport

        views.append(LiveExport(where, log, started=started, content=content, redact=redact,
                                 recorded=recorded))  # fmt: skip
        return parts()

    return assemble


def _tidy_recordings(log: Logger, keep_days: float | None, keep_size: int | None) -> None:
    """Tidy the default recordings directory as a session starts (``--keep-days``,
    ``--keep-size``); never raises."""
    from acp_proxy.transcript.names import default_record_dir, prune

    try:
        for removed in prune(default_record_dir(), keep_days, keep_size):
            log.info("removed an old recording", path=str(removed))
    except Exception as exc:  # tidying must never cost the session
        log.warning("could not tidy the recordings directory", error=repr(exc))


def _spool_for(record: str | None, pid: int) -> Path | None:
    """Where the relay spools a line too long to hold: the recording's directory (None:
    it cannot even be worked out, and the session will not be recorded)."""
    from acp_proxy.transcript.names import resolve_record_path

    try:
        return resolve_record_path(record, pid).parent
    except (OSError, RuntimeError, ValueError):
        return None


#: run's options that shape or serve the recording.
_RECORDING = ("record", "redact", "no_stderr", "inspect_live")


def _closing_line(observer: Observer | None, log: Logger) -> None:
    """The session's last line, as the demo ends: how many frames and findings, and the
    command that shows it (the log names the recording at the start only)."""
    from acp_proxy.live.addons import LogFindings

    if observer is None or observer.recorder.path is None:
        return
    levels: dict[str, int] = {}
    for addon in observer.addons:
        if isinstance(addon, LogFindings):
            levels = addon.levels
    with contextlib.suppress(Exception):
        log.info(
            "recorded",
            frames=observer.seq,
            errors=levels.get("error", 0),
            warnings=levels.get("warning", 0),
            see=f"acp-proxy show {shlex.quote(str(observer.recorder.path))}",
        )


def _what_does_nothing(record: str | None, no_record: bool) -> None:
    """``run``'s options that would do nothing, given on the command line: usage errors."""
    if no_record:  # options that shape, serve or tidy the recordings, where there is none
        no_effect("with --no-record", *_RECORDING, "keep_days", "keep_size")
    if record is not None:
        no_effect("with --record (it tidies the default recordings directory)",
                   "keep_days", "keep_size")  # fmt: skip


@command(
    context_settings={"allow_interspersed_args": False},
    short="Relay an agent's stdio, recording and validating it.",
    examples=[
        "acp-proxy run -- my-agent --acp",
        "acp-proxy run --record out/ --redact -- my-agent",
    ],
)
@click.option(
    "--record",
    "record",
    metavar="PATH",
    shell_complete=complete_path,
    envvar=envvar("RECORD"),
    callback=not_stdout(NOT_A_RECORDING_PLACE),
    help="Directory (or path ending in /) for a new file per session, or a file to append to. "
    "Default: $ACP_PROXY_RECORD_DIR, else $XDG_STATE_HOME/acp-proxy/recordings, "
    "else ~/.local/state/acp-proxy/recordings.",
)
@click.option(
    "--no-record", is_flag=True, envvar=envvar("NO_RECORD"), help="Do not record the session."
)
@click.option(
    "--grace",
    type=Seconds(),
    default=5.0,
    show_default=True,
    envvar=envvar("GRACE"),
    help="Seconds the agent gets to exit after its stdin closes, before SIGTERM, "
    "and again before SIGKILL.",
)
@click.option(
    "--no-stderr",
    is_flag=True,
    envvar=envvar("NO_STDERR"),
    help="Do not record the agent's stderr (it still passes through to ours).",
)
@click.option(
    "--redact",
    is_flag=True,
    envvar=envvar("REDACT"),
    help="Record with secrets (env and headers values, auth parameters, token/key/secret/"
    "password fields) replaced by tags, as `acp-proxy redact` does. The wire is untouched.",
)
@click.option(
    "--notify-client",
    is_flag=True,
    envvar=envvar("NOTIFY_CLIENT"),
    help="Also tell the user in their editor: insert a live-only notice into the agent's "
    "stream for each rule a v2 session breaks (once per rule per session).",
)
@click.option(
    "--keep-days",
    type=Seconds(high=100_000.0),
    envvar=envvar("KEEP_DAYS"),
    metavar="N",
    help="When a session starts, remove recordings older than N days from the default "
    "recordings directory (only files the proxy made, never one being written).",
)
@click.option(
    "--keep-size",
    callback=as_size,
    envvar=envvar("KEEP_SIZE"),
    metavar="SIZE",
    help="When a session starts, remove the oldest recordings of the default recordings "
    "directory until the rest fit SIZE (500M, 2G).",
)
@click.option(
    "--inspect",
    "inspect_live",
    is_flag=True,
    envvar=envvar("INSPECT"),
    help="Also serve this session's page live on 127.0.0.1 (acp-proxy inspect, in its own "
    "process, stopped with the proxy); its URL goes to stderr, a new one each session. One "
    "URL for every session: keep `acp-proxy inspect` open (the recordings directory, live).",
)
@click.option(
    "--addon",
    "addon_files",
    multiple=True,
    metavar="FILE[:NAME]",
    envvar=envvar("ADDON"),
    help="Also hand the session to addons of your own: a Python file's `addons` list, or "
    "NAME in it (acp_proxy.Addon: the same class reads a recording). Repeatable.",
)
@click.option(
    "--otlp",
    metavar="ENDPOINT",
    envvar=envvar("OTLP"),
    help="Also send the session to an OpenTelemetry backend as it goes (OTLP/HTTP base URL; "
    "a trace per session, each turn when it ends; OTEL_EXPORTER_OTLP_* honoured).",
)
@click.option(
    "--otlp-content",
    is_flag=True,
    envvar=envvar("OTLP_CONTENT"),
    help="With --otlp: also send each turn's prompt and reply text.",
)
@logging_options
@click.argument(
    "command", nargs=-1, required=True, type=click.UNPROCESSED, metavar="-- AGENT [ARGS]..."
)
def run(
    record: str | None,
    no_record: bool,
    grace: float,
    no_stderr: bool,
    redact: bool,
    notify_client: bool,
    keep_days: float | None,
    keep_size: int | None,
    inspect_live: bool,
    addon_files: tuple[str, ...],
    otlp: str | None,
    otlp_content: bool,
    log_file: str | None,
    log_level: str,
    log_format: str,
    color: str,
    command: tuple[str, ...],
) -> None:
    """Run AGENT and relay its stdio, recording the session.

    \b
    Exit status: the agent's (128+N: killed by signal N), 127 AGENT not found,
    126 not executable, 70 acp-proxy itself failed (a bug), 2 usage, 130 Ctrl-C.

    Every option can also be set in the environment as ACP_PROXY_RUN_<OPTION>
    (run's own) or ACP_PROXY_<OPTION>, for example ACP_PROXY_LOG_FILE=/tmp/acp.log
    or ACP_PROXY_NO_RECORD=1; a typed option wins.
    """
    from acp_proxy.live.spawn import AgentNotExecutable, AgentNotFound, take_agent

    # A typed option that shapes the recording wins over $ACP_PROXY_NO_RECORD.
    no_record = no_record and not overruled("no_record", *_RECORDING)
    _what_does_nothing(record, no_record)
    argv = list(command)
    addons: list[Addon] = []
    if addon_files:  # (the session's parts are loaded later, in a thread: see below)
        from acp_proxy.live.session import user_addons

        addons = user_addons(addon_files)
    where = _otlp_target(otlp, otlp_content)
    # The agent first (started before click was loaded, by acp_proxy.__main__, when it
    # could be): its start overlaps the proxy's (what it writes waits in its pipe).
    try:
        agent = take_agent(click.get_current_context().obj, argv)
    except AgentNotFound:
        say(f"acp-proxy: {not_found(argv[0], editor=True)}")
        sys.exit(EXIT_NOT_FOUND)
    except AgentNotExecutable as exc:
        say(f"acp-proxy: agent command cannot be executed: {exc}")
        sys.exit(EXIT_NOT_EXECUTABLE)

    from acp_proxy.core.times import format_time
    from acp_proxy.live.later import LateObserver

    stream = open_log(log_file)
    configure(log_level.lower(), log_format, stream, use_color(color, stream))
    log = get_logger()
    pid = agent.process.pid
    started = format_time()  # (the start record's time: every frame comes after it)
    inspector: list[subprocess.Popen[bytes] | None] = []
    views: list[Addon] = []  # our own (the OTLP export), before the user's addons
    parts: Callable[[], Observer] = functools.partial(
        _observer, argv, pid, log, started=started, record=record, no_record=no_record,
        redact=redact, record_stderr=not no_stderr, notify_client=notify_client,
        keep_days=keep_days, keep_size=keep_size, inspect_live=inspect_live, inspector=inspector,
        addons=addons, views=views,
    )  # fmt: skip
    if where is not None:  # the OTLP view is loaded with the observer, in its thread
        parts = _with_otlp(parts, views, where, log, (started, pid), otlp_content, redact,
                           recorded=not no_record)  # fmt: skip
    from acp_proxy.live.relay import run_relay

    # The relay starts now, and observation is loaded in a thread meanwhile (once the relay
    # is: the two imports would slow each other): what is read before it is ready waits for
    # it, in order.
    observer = LateObserver(parts, log, None if no_record else _spool_for(record, pid))
    if notify_client:  # the notices are live: observation is ready before anything crosses
        observer.wait()

    try:
        result = run_relay(agent, observer, log, grace=grace)
    except Exception as exc:  # a bug in the proxy: still close the transcript, no traceback
        agent.kill()
        log.exception("acp-proxy failed; the agent was stopped")
        observer.finish(None, f"acp-proxy failed: {exc!r}")
        exit_with(EXIT_PROXY_FAILED)
    observer.finish(result.returncode, result.reason)
    _closing_line(observer.wait(), log)
    for page in inspector:
        if page is not None:
            with contextlib.suppress(OSError):
                page.terminate()
    exit_with(result.exit_status)
