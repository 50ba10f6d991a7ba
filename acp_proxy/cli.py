"""Command-line interface: argument parsing and exit statuses only."""

from __future__ import annotations

import contextlib
import gc
import math
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from acp_proxy import __version__
from acp_proxy.core.visible import dumps, visible
from acp_proxy.log import LEVELS, Logger, LogStream, configure, get_logger, open_log

if TYPE_CHECKING:
    import subprocess

    from acp_proxy.drive.probe import ProbeResult
    from acp_proxy.readers.annotate import RecordingError

# Only what every command needs is imported here: `run` starts the agent first and loads
# the rest of the proxy (the validator, the schemas, asyncio) while the agent starts;
# every other command imports what it uses.

__all__ = ["cli", "main"]

#: Allocations between the cycle collector's young collections (Python's default: 700).
GC_YOUNG = 50_000

#: Exit statuses of ``run`` when the agent cannot be started (as a shell does).
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126
#: Exit status of ``run`` when the proxy itself fails (a bug: please report it).
EXIT_PROXY_FAILED = 70
#: Exit status of a command stopped by Ctrl-C (SIGINT), as a shell's.
EXIT_INTERRUPTED = 130


def _open_log(log_file: str | None) -> LogStream:
    return open_log(log_file)


class _Seconds(click.ParamType):  # type: ignore[type-arg]  # (generic from click 8.2)
    """A finite number of seconds within bounds: ``nan``, ``inf`` and what is out of range
    are a clear error (exit 2), never a traceback later."""

    name = "seconds"

    def __init__(self, low: float = 0.0, high: float = 86_400.0, open_low: bool = False) -> None:
        self.low, self.high, self.open_low = low, high, open_low

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        below = number <= self.low if self.open_low else number < self.low
        if below or number > self.high:
            low = f"more than {self.low:g}" if self.open_low else f"at least {self.low:g}"
            self.fail(f"{value!r} is out of range: {low} and at most {self.high:g}", param, ctx)
        return number


class _Speed(click.ParamType):  # type: ignore[type-arg]
    """A replay speed: 0 (as fast as possible), or a finite factor from 0.001 to 1,000,000."""

    name = "factor"

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> float:
        number = _Seconds(0.0, 1e6).convert(value, param, ctx)
        if 0 < number < 1e-3:
            self.fail(f"{value!r} is out of range: 0, or from 0.001 to 1000000", param, ctx)
        return number


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


def _prune(log: Logger, keep_days: float | None, keep_size: int | None) -> None:
    """Tidy the default recordings directory as a session starts; never raises."""
    from acp_proxy.readers.catalog import prune
    from acp_proxy.transcript.names import default_record_dir

    try:
        for removed in prune(default_record_dir(), keep_days, keep_size):
            log.info("removed an old recording", path=str(removed))
    except Exception as exc:  # tidying must never cost the session
        log.warning("could not tidy the recordings directory", error=repr(exc))


def _size(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    if value is None:  # (run calls this too: nothing more is loaded before the agent starts)
        return None
    from acp_proxy.readers.catalog import parse_size

    try:
        return parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _say(message: str) -> None:
    """One line for the user on stderr, its wire strings escaped; never raises (stderr may
    be gone: the client that started us went away)."""
    with contextlib.suppress(OSError, ValueError):
        click.echo(visible(message), err=True)


def _exit(status: int) -> NoReturn:
    """Exit with ``status`` whatever happened to stderr (Python makes a failed flush of it
    at exit status 120)."""
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the interpreter's exit
    sys.exit(status)


def _given(name: str) -> bool:
    """Whether option ``name`` was given on the command line."""
    ctx = click.get_current_context()
    return ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE


def _only_with(needed: str, *names: str) -> None:  # needed: "without --prune"
    """An option given on the command line where it has no effect is a usage error (exit
    2): what is set in the environment is for the commands it fits."""
    ctx = click.get_current_context()
    for param in ctx.command.params:
        if param.name in names:
            source = ctx.get_parameter_source(param.name)
            if source == click.core.ParameterSource.COMMANDLINE:
                option = max(param.opts, key=len)
                raise click.UsageError(f"{option} has no effect {needed}")


def _env(name: str) -> str:
    return f"ACP_PROXY_{name}"


#: What ``--color`` takes: auto (on a terminal, unless NO_COLOR is set), always, never.
COLOR_WHEN = ("auto", "always", "never")


def _no_color(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    if value:  # the older spelling of --color never
        ctx.meta["acp_proxy.no_color"] = True


def _color_option(description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--color WHEN`` (and ``--no-color``, hidden: ``--color never``)."""

    def add(func: Any) -> Any:
        func = click.option(
            "--no-color", is_flag=True, hidden=True, expose_value=False, callback=_no_color
        )(func)
        return click.option(
            "--color",
            "color",
            type=click.Choice(COLOR_WHEN),
            default="auto",
            show_default=True,
            envvar=_env("COLOR"),
            metavar="WHEN",
            help=f"{description}: auto (only on a terminal, and not when NO_COLOR is set), "
            "always or never.",
        )(func)

    return add


def _logging_options(func: Any) -> Any:
    func = _color_option("Colour log lines")(func)
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


def _connection_options(which: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--connection N`` and ``--session ID``: which recorded session of a file to take."""

    def add(func: Any) -> Any:
        func = click.option(
            "--session",
            "session_id",
            metavar="ID",
            help="The recorded session holding ACP session ID (as show --session ID); "
            "a number is the older spelling of --connection (deprecated).",
        )(func)
        return click.option(
            "--connection",
            type=click.IntRange(min=1),
            metavar="N",
            help=f"Which recorded session of a file with several: 1 is the first{which}. "
            "Default: 1.",
        )(func)

    return add


def _connection(path: str, connection: int | None, session_id: str | None) -> int:
    """The connection ``--connection`` or ``--session`` names in ``path`` (default: 1)."""
    if session_id is None:
        return connection or 1
    if connection is not None:
        raise click.UsageError("give --connection N or --session ID, not both")
    if session_id.isdigit():
        _deprecated(f"--session {session_id}", f"--connection {session_id}")
        return int(session_id)
    from acp_proxy.readers.annotate import connection_of

    number = connection_of(path, session_id)
    if number is None:
        raise _Unreadable(f"{path} has no session {session_id}")
    return number


def _deprecated(old: str, new: str) -> None:
    """An older spelling still works, and says (once) what to write instead."""
    if old not in _SAID:
        _SAID.add(old)
        _say(f"acp-proxy: {old} is deprecated: use {new}")


#: The deprecation notes given so far.
_SAID: set[str] = set()


class _Unreadable(click.ClickException):
    """A recording that cannot be read: exit status 2, one clear line."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        _say(f"acp-proxy: {self.message}")


def _interrupted() -> NoReturn:
    """Ctrl-C: stop quietly with 130, once what was being done has unwound (recordings get
    their end record on the way). Not through the interpreter's exit: a daemon thread
    reading stdin holds its lock, and finalizing the stream under it aborts (SIGABRT)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(EXIT_INTERRUPTED)


class _Group(click.Group):
    """Commands whose recordings cannot be read end with one line, never a traceback;
    Ctrl-C stops any of them quietly (exit 130, no ``Aborted!``)."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            _interrupted()
        except Exception as exc:
            # A RecordingError can only come from its module, once it is loaded.
            reading = sys.modules.get("acp_proxy.transcript.reading")
            if reading is not None and isinstance(exc, reading.RecordingError):
                raise _Unreadable(str(exc)) from None
            raise


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--version``: acp-proxy's, and the schemas it checks against (read when asked)."""
    if not value or ctx.resilient_parsing:
        return
    from acp_proxy.core.schema import schema_sources

    click.echo(f"acp-proxy, version {__version__}")
    click.echo(f"checks against {schema_sources().summary()}")
    ctx.exit()


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--version",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_version,
    help="Show the version and the ACP schemas it checks against, and exit.",
)
def cli() -> None:
    """A transparent proxy for the Agent Client Protocol (ACP).

    It relays an agent's stdio unchanged, records every session to a JSONL
    transcript and flags violations of the protocol version the two sides
    negotiated (v1 or v2).
    """
    # Logging is configured by the commands that log (`run` once the agent is started),
    # and by get_logger if nothing did: never to stdout, and not loaded by the readers.
    # Every frame makes a few short-lived objects that reference counting frees; the
    # cycle collector's default pace (a young collection every 700 allocations, and a
    # full one over every object every 70,000) cost 10% of the proxy's time on a stream.
    _settle()
    gc.set_threshold(GC_YOUNG)


def _settle() -> None:
    """What exists now (modules, click, compiled checks) is never garbage: it leaves
    the cycle collector's scans."""
    gc.freeze()


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
    type=_Seconds(),
    default=5.0,
    show_default=True,
    envvar=_env("GRACE"),
    help="Seconds the agent gets to exit after its stdin closes, before SIGTERM, "
    "and again before SIGKILL.",
)
@click.option(
    "--no-stderr",
    is_flag=True,
    envvar=_env("NO_STDERR"),
    help="Do not record the agent's stderr (it still passes through to ours).",
)
@click.option(
    "--redact",
    is_flag=True,
    envvar=_env("REDACT"),
    help="Record with secrets (env and headers values, auth parameters, token/key/secret/"
    "password fields) replaced by tags, as `acp-proxy redact` does. The wire is untouched.",
)
@click.option(
    "--notify-client",
    is_flag=True,
    envvar=_env("NOTIFY_CLIENT"),
    help="Also tell the user in their editor: insert a live-only notice into the agent's "
    "stream for each rule a v2 session breaks (once per rule per session).",
)
@click.option(
    "--keep-days",
    type=_Seconds(high=100_000.0),
    envvar=_env("KEEP_DAYS"),
    metavar="N",
    help="When a session starts, remove recordings older than N days from the default "
    "recordings directory (only files the proxy made, never one being written).",
)
@click.option(
    "--keep-size",
    callback=_size,
    envvar=_env("KEEP_SIZE"),
    metavar="SIZE",
    help="When a session starts, remove the oldest recordings of the default recordings "
    "directory until the rest fit SIZE (500M, 2G).",
)
@click.option(
    "--inspect",
    "inspect_live",
    is_flag=True,
    envvar=_env("INSPECT"),
    help="Also serve this session's page live on 127.0.0.1 (acp-proxy inspect, in its own "
    "process, stopped with the proxy); its URL goes to stderr.",
)
@_logging_options
@click.argument("command", nargs=-1, required=True, type=click.UNPROCESSED)
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
    log_file: str | None,
    log_level: str,
    log_format: str,
    color: str,
    command: tuple[str, ...],
) -> None:
    """Run COMMAND (the agent) and relay its stdio, recording the session.

    Every option can also be set in the environment as ACP_PROXY_<OPTION>,
    for example ACP_PROXY_LOG_FILE=/tmp/acp.log or ACP_PROXY_NO_RECORD=1.
    """
    from acp_proxy.live.spawn import AgentNotExecutable, AgentNotFound, start_agent

    argv = list(command)
    # The agent first: its start overlaps the proxy's (what it writes waits in its pipe).
    try:
        agent = start_agent(argv)
    except AgentNotFound:
        _say(f"acp-proxy: agent command not found: {argv[0]}")
        sys.exit(EXIT_NOT_FOUND)
    except AgentNotExecutable as exc:
        _say(f"acp-proxy: agent command cannot be executed: {exc}")
        sys.exit(EXIT_NOT_EXECUTABLE)

    from acp_proxy.core.validator import Validator
    from acp_proxy.live.observer import Observer
    from acp_proxy.live.recorder import Recorder, session_recorder
    from acp_proxy.live.relay import run_relay

    stream = _open_log(log_file)
    configure(log_level.lower(), log_format, stream, _colored(color, stream))
    log = get_logger()
    redactor = None
    recorded_argv = argv
    if redact:
        from acp_proxy.transcript.redact import Redactor

        redactor = Redactor()
        recorded_argv = redactor.argv(argv)[0]
    pid = agent.process.pid
    recorder = (
        Recorder(None, log) if no_record else session_recorder(record, log, recorded_argv, pid)
    )
    observer = Observer(
        recorder,
        log,
        Validator(),
        notify_client=notify_client,
        redactor=redactor,
        record_stderr=not no_stderr,
    )
    if record is None and (keep_days is not None or keep_size is not None):
        _prune(log, keep_days, keep_size)
    inspector = None
    if inspect_live and recorder.path is not None:
        inspector = _start_inspector(recorder.path, log)
    _settle()
    try:
        result = run_relay(agent, observer, log, grace=grace)
    except Exception as exc:  # a bug in the proxy: still close the transcript, no traceback
        agent.kill()
        log.exception("acp-proxy failed; the agent was stopped")
        observer.finish(None, f"acp-proxy failed: {exc!r}")
        _exit(EXIT_PROXY_FAILED)
    observer.finish(result.returncode, result.reason)
    if inspector is not None:
        with contextlib.suppress(OSError):
            inspector.terminate()
    _exit(result.exit_status)


@cli.command(context_settings={"allow_interspersed_args": False})
@click.option(
    "--as",
    "role",
    type=click.Choice(["agent", "client"]),
    default="agent",
    show_default=True,
    help="agent: the recording plays the agent, on our stdio. client: the recording plays the "
    "client against AGENT.",
)
@click.option(
    "--speed",
    type=_Speed(),
    default=1.0,
    show_default=True,
    help="As the agent: 2 plays twice as fast as recorded; 0 as fast as possible.",
)
@click.option(
    "--match",
    type=click.Choice(["exact", "method"]),
    default="exact",
    show_default=True,
    help="As the agent: how a client message must match the recorded one. exact: same method "
    "and params (without _meta); method: the method only.",
)
@_connection_options("")
@click.option(
    "--allow-client-actions",
    "allow_actions",
    is_flag=True,
    help="As the agent: send the editor the recording's requests that act (write or read a "
    "file, run a command...). Without it they are listed and withheld: the replay answers "
    "them as recorded.",
)
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="PATH",
    help="As the client: a field to leave out when comparing the agent's frames, e.g. "
    "params.update.content.text (repeatable).",
)
@click.option(
    "--ignore-update",
    "ignore_updates",
    multiple=True,
    metavar="VARIANT",
    help="As the client: leave session/update notifications of this kind out, recorded and "
    "live, e.g. available_commands_update, which agents send whenever they like (repeatable).",
)
@click.option(
    "--timeout",
    type=_Seconds(open_low=True),
    default=30.0,
    show_default=True,
    help="As the client: seconds to wait for an expected agent frame.",
)
@click.option(
    "--record",
    metavar="PATH",
    help="As the client: record the new session there (as `run --record` does).",
)
@click.option(
    "--junit",
    metavar="FILE",
    help="As the client: also write the divergences as JUnit XML (a failure each) to FILE.",
)
@_logging_options
@click.argument("recording", metavar="RECORDING")
@click.argument("agent", nargs=-1, type=click.UNPROCESSED, metavar="[-- AGENT [ARGS]...]")
def replay(
    role: str,
    speed: float,
    match: str,
    connection: int | None,
    session_id: str | None,
    allow_actions: bool,
    ignore: tuple[str, ...],
    ignore_updates: tuple[str, ...],
    timeout: float,
    record: str | None,
    junit: str | None,
    log_file: str | None,
    log_level: str,
    log_format: str,
    color: str,
    recording: str,
    agent: tuple[str, ...],
) -> None:
    """Play a recorded session: as the agent (a fake agent for editors and clients), or with
    --as client as the client, against AGENT (a regression test for agents).

    \b
    As the agent, RECORDING answers on stdin/stdout like any agent; put
    `acp-proxy replay REC` in the editor's agent command. What it would have the
    editor do (write a file, run a command) is listed and withheld unless
    --allow-client-actions. Exit status: 0 every
    recorded client frame matched, 1 the client diverged or stopped early.
    As the client: 0 the agent answered as recorded, 1 it diverged.
    2: the recording cannot be read.
    """
    from acp_proxy.readers.replay import AgentReplay, drive_agent, load_script, serve_agent

    stream = _open_log(log_file)
    configure(log_level.lower(), log_format, stream, _colored(color, stream))
    log = get_logger()
    agent = _replay_usage(role, agent, allow_actions)
    session = _connection(recording, connection, session_id)
    try:
        script = load_script(recording, session)
    except ValueError as exc:
        raise _Unreadable(str(exc)) from None
    if script.sessions > 1:
        log.info("recording has several sessions", sessions=script.sessions, playing=session)
    if role == "agent":
        fake = AgentReplay(script, match=match, speed=speed, allow_actions=allow_actions)
        _list_actions(fake.actions, allow_actions)
        sys.exit(serve_agent(fake, sys.stdin.buffer, sys.stdout.buffer, log))
    result = drive_agent(
        script, list(agent), ignore=ignore, timeout=timeout, record=record,
        skip_updates=ignore_updates,
    )  # fmt: skip
    if result.proxy_status in (EXIT_NOT_FOUND, EXIT_NOT_EXECUTABLE):
        sys.exit(result.proxy_status)
    for line in result.divergences:
        _say(f"acp-proxy replay: divergence: {line}")
    if junit is not None:
        from acp_proxy.files import open_output
        from acp_proxy.readers.ci import junit_divergences

        try:
            with os.fdopen(open_output(junit), "w", encoding="utf-8") as out:
                out.write(junit_divergences(recording, result.divergences) + "\n")
        except OSError as exc:
            raise click.ClickException(visible(f"cannot write {junit}: {exc.strerror}")) from None
    frames = sum(1 for step in script.steps)
    if result.ok:
        log.info("the agent answered as recorded", frames=frames)
    sys.exit(0 if result.ok else 1)


def _json_option(description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--format text|json`` (and ``--json``, hidden: its older spelling)."""

    def add(func: Any) -> Any:
        func = click.option("--json", "legacy_json", is_flag=True, hidden=True)(func)
        return _format_option(description)(func)

    return add


def _json_wanted(fmt: str, legacy_json: bool) -> bool:
    if legacy_json:
        _deprecated("--json", "--format json")
    return legacy_json or fmt == "json"


def _replay_usage(role: str, agent: tuple[str, ...], allow_actions: bool) -> tuple[str, ...]:
    """The agent command of ``replay``, once the options fit the role (a usage error if
    not)."""
    if agent[:1] == ("--",):  # `--` after RECORDING separates the agent's own arguments
        agent = agent[1:]
    if role == "agent" and agent:
        raise click.UsageError("an AGENT command is only for --as client")
    if role == "agent":
        _only_with("without --as client", "ignore", "ignore_updates", "timeout", "record", "junit")
    else:
        _only_with("with --as client", "speed", "match")
    if role == "client" and not agent:
        raise click.UsageError("--as client needs the agent to run: -- AGENT [ARGS]...")
    if role == "client" and allow_actions:
        raise click.UsageError("--allow-client-actions is only for the recording as the agent")
    return agent


def _list_actions(actions: list[Any], allowed: bool) -> None:
    """Say, before a replay as the agent starts, what the recording would have the editor do."""
    from acp_proxy.readers.replay import action_summary

    if not actions:
        return
    what = (
        "sent to the editor (--allow-client-actions)"
        if allowed
        else "withheld: the replay answers them as recorded (--allow-client-actions sends them)"
    )
    _say(f"acp-proxy replay: the recording asks the editor to act {len(actions)} time(s), {what}:")
    for step in actions:
        _say(f"  {action_summary(step)}")


@cli.command()
@click.argument("recording", metavar="RECORDING")
@click.option(
    "-o",
    "--output",
    metavar="OUT.html",
    help="Where to write the page (-: stdout). Default: the recording's path with .html.",
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
def report(recording: str, output: str | None, revalidate: bool, against: str | None) -> None:
    """Write RECORDING as one self-contained HTML page: the sequence of frames with their
    findings and bytes, the conversation, and the stats. It opens offline (nothing is fetched),
    so it can be attached to a bug report.
    """
    from acp_proxy.readers.report import write_report

    out = output or str(Path(recording).with_suffix(".html"))
    if out != "-" and Path(out).resolve() == Path(recording).resolve():
        raise click.UsageError("the output would overwrite the recording; give -o OUT.html")
    try:
        size = write_report(recording, out, revalidate=revalidate, against=against)
    except OSError as exc:
        raise click.ClickException(visible(f"cannot write {out}: {exc.strerror}")) from None
    if out == "-":
        _say(f"acp-proxy report: {size:,} bytes written to standard output")
        return
    with _output("never") as emit:
        emit(f"{out} ({size:,} bytes)")


@cli.command()
@click.argument("recording", metavar="RECORDING")
@click.option(
    "-o", "--output", metavar="OUT", required=True, help="Where to write the copy (-: stdout)."
)
@click.option(
    "--contents",
    is_flag=True,
    help="Also replace file contents, resource contents, terminal output, prompt text and what "
    "tool calls carry (content, rawInput, rawOutput) with their size and a tag.",
)
def redact(recording: str, output: str, contents: bool) -> None:
    """Write a copy of RECORDING that is safe to attach to a bug report.

    \b
    Replaced by "[redacted:<tag>]" (the same value gets the same tag in the copy):
    the values of env and headers entries, authenticate / auth/login parameters,
    any field whose name looks like a token, key, secret, password, credential,
    cookie or authorization, secret-looking flags of the agent command, and in
    every string (stored findings too) API-key shapes and NAME=value secrets.
    A line that is no record is replaced by its size.
    Everything else stays byte for byte; frames that changed list the paths
    (`"redacted": [...]`). Exit status: 0 written, 2 unreadable recording.
    """
    from acp_proxy.readers.annotate import open_recording
    from acp_proxy.transcript.redact import redact_stream

    to_stdout = output == "-"
    same = Path(output).exists() and Path(output).resolve() == Path(recording).resolve()
    if same and not to_stdout:
        raise click.UsageError("the copy would overwrite the recording; give another -o")
    next(iter(open_recording(recording)))  # says clearly if it is no transcript
    from acp_proxy.files import open_output

    try:
        with (
            open(recording, "rb") as source,
            os.fdopen(open_output(output, dash=True), "wb") as out,
        ):
            records, changed = redact_stream(source, out, contents=contents)
    except OSError as exc:
        raise click.ClickException(visible(f"cannot write {output}: {exc.strerror}")) from None
    if to_stdout:
        _say(f"acp-proxy redact: {records} records, {changed} redacted, to standard output")
        return
    with _output("never") as emit:
        emit(f"{output}: {records} records, {changed} redacted")


def _format_option(description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help=description,
    )


@cli.command()
@click.argument("recordings", nargs=-1, required=True, metavar="RECORDING...")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "junit", "sarif"]),
    default="text",
    show_default=True,
    help="text: FILE:LINE: seq SEQ: LEVEL RULE: MESSAGE lines; json: one object per finding; "
    "junit: JUnit XML (a suite per recording, a test case per rule); sarif: SARIF 2.1.0.",
)
@click.option(
    "--by-rule",
    is_flag=True,
    help="text: after the summary line (stderr), a line per rule broken: RULE: N LEVEL.",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Warnings fail too (exit 1), such as what the shipped schemas do not define yet.",
)
def validate(recordings: tuple[str, ...], fmt: str, by_rule: bool, strict: bool) -> None:
    """Re-run the validator over recorded sessions and print the findings.

    Stored findings are ignored and recomputed; a file with several sessions
    appended is validated session by session. As text, a line per finding,
    and a summary line on stderr: files, errors, warnings, info. Exit status: 0 no
    error-level finding (with --strict: no warning either), 1 at least one, 2 a file
    that cannot be read.
    """
    from acp_proxy.readers.annotate import RecordingError, finding_line, validate_recording
    from acp_proxy.readers.ci import Checked, junit, sarif

    if by_rule and fmt != "text":
        raise click.UsageError("--by-rule has no effect with --format " + fmt)
    errors = 0
    failing = ("error", "warning") if strict else ("error",)
    unreadable = False
    checked: list[Checked] = []
    levels: dict[str, int] = {}
    rules: dict[str, tuple[int, str]] = {}
    with _output("never") as emit:
        for path in recordings:
            item = Checked(path)
            checked.append(item)
            try:
                for line, finding in validate_recording(path):
                    errors += finding.level in failing
                    levels[finding.level] = levels.get(finding.level, 0) + 1
                    rules[finding.rule] = (rules.get(finding.rule, (0, ""))[0] + 1, finding.level)
                    if fmt in ("junit", "sarif"):
                        item.findings.append((line, finding))
                    else:
                        emit(finding_line(path, line, finding, fmt))
            except RecordingError as exc:
                _complain(exc)
                item.unreadable = str(exc)
                unreadable = True
        if fmt == "junit":
            emit(junit(checked))
        elif fmt == "sarif":
            emit(sarif(checked).decode())
    if fmt == "text" and not all(item.unreadable for item in checked):
        # on stderr, as a compiler's count: stdout is the findings, a line each
        _say(_validated(checked, levels))
        for rule, (count, level) in sorted(rules.items(), key=lambda r: (-r[1][0], r[0])):
            if by_rule:
                _say(f"  {rule}: {count} {level}")
    sys.exit(2 if unreadable else 1 if errors else 0)


def _validated(checked: list[Any], levels: dict[str, int]) -> str:
    """``validate``'s summary line: files, errors, warnings, info."""
    files = len(checked)
    line = f"{files} file{'s' if files != 1 else ''}"
    unreadable = sum(1 for item in checked if item.unreadable)
    if unreadable:
        line += f" ({unreadable} unreadable)"
    counts = [(levels.get(level, 0), level) for level in ("error", "warning", "info")]
    words = {"error": "errors", "warning": "warnings", "info": "info"}
    said = ", ".join(f"{n} {words[level] if n != 1 else level}" for n, level in counts)
    return f"{line}: {said}"


def _age(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
    from acp_proxy.readers.catalog import parse_age

    try:
        return None if value is None else parse_age(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _targets(paths: tuple[str, ...]) -> tuple[str, ...]:
    from acp_proxy.transcript.names import default_record_dir

    return paths or (str(default_record_dir()),)


@cli.command(name="ls")
@click.argument("paths", nargs=-1, metavar="[DIR|FILES...]")
@_json_option("text: a line per session; json: an object per session, for tools.")
@click.option(
    "--since", callback=_age, metavar="AGE", help="Only sessions started in the last AGE (2d, 12h)."
)
@click.option("--until", callback=_age, metavar="AGE", help="Only sessions started before AGE ago.")
@click.option(
    "--agent", metavar="NAME", help="Only sessions whose agent name or command contains NAME."
)
@click.option("--with-findings", is_flag=True, help="Only sessions with errors or warnings.")
@click.option(
    "--prune", is_flag=True, help="First remove old recordings (as --keep-days/--keep-size say)."
)
@click.option(
    "--dry-run", is_flag=True, help="With --prune: say what would be removed, remove nothing."
)
@click.option(
    "--keep-days",
    type=_Seconds(high=100_000.0),
    envvar=_env("KEEP_DAYS"),
    metavar="N",
    help="With --prune: remove recordings older than N days.",
)
@click.option(
    "--keep-size",
    callback=_size,
    envvar=_env("KEEP_SIZE"),
    metavar="SIZE",
    help="With --prune: remove the oldest until the rest fit SIZE (500M, 2G).",
)
def list_recordings(
    paths: tuple[str, ...],
    fmt: str,
    legacy_json: bool,
    since: Any,
    until: Any,
    agent: str | None,
    with_findings: bool,
    prune: bool,
    dry_run: bool,
    keep_days: float | None,
    keep_size: int | None,
) -> None:
    """The recorded sessions, newest first: start, agent, protocol version, duration, prompt
    turns, frames, findings by level, size, path. Default: the recordings directory.

    A session's summary is read once and kept in a small index in the user's cache
    directory ($XDG_CACHE_HOME or ~/.cache, acp-proxy/), read again when the file changes.
    """
    as_json = _json_wanted(fmt, legacy_json)
    from acp_proxy.readers.catalog import list_sessions, recordings_in, select, table
    from acp_proxy.readers.catalog import prune as prune_directory

    targets = _targets(paths)
    if not prune:
        _only_with("without --prune", "keep_days", "keep_size", "dry_run")
    if prune:
        if keep_days is None and keep_size is None:
            raise click.UsageError("--prune needs --keep-days or --keep-size")
        done = "would remove" if dry_run else "removed"
        for target in targets:
            if Path(target).is_dir():
                for removed in prune_directory(Path(target), keep_days, keep_size, dry_run=dry_run):
                    _say(f"acp-proxy: {done} {removed}")
    files, problems = recordings_in(targets)
    sessions, unreadable = list_sessions(files)
    for problem in [*problems, *unreadable]:
        _say(f"acp-proxy: {problem}")
    shown = select(sessions, since, until, agent, with_findings)
    with _output("never") as emit:
        for line in (dumps(s.as_json()).decode() for s in shown) if as_json else table(shown):
            emit(line)
    sys.exit(2 if problems and not sessions else 0)


@cli.command()
@click.argument("path", required=False, metavar="[DIR|FILE]")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Default: a free one.")
@click.option("--open", "open_browser", is_flag=True, help="Open the page in the browser.")
@click.option(
    "--request-timeout",
    type=_Seconds(high=3600.0, open_low=True),
    default=10.0,
    show_default=True,
    envvar=_env("REQUEST_TIMEOUT"),
    help="Seconds a connection has to send its request before it is closed.",
)
@click.option("--parent", type=int, hidden=True, help="Stop when this process is gone.")
def inspect(
    path: str | None, port: int, open_browser: bool, request_timeout: float, parent: int | None
) -> None:
    """Serve the report page on 127.0.0.1, live: the sessions of DIR (default: the recordings
    directory), newest first, each growing as it is recorded. Every URL carries a token; the
    URL is printed on stderr (--open gives the browser a private file that leads to it, never
    the token itself)."""
    import signal
    import threading

    from acp_proxy.readers.inspect import Inspector, redirect_file, serve
    from acp_proxy.transcript.names import default_record_dir

    target = Path(path) if path else default_record_dir()
    if not target.exists():
        raise _Unreadable(f"{target}: no such file or directory")
    inspector = Inspector(target)
    ready = threading.Event()
    server = threading.Thread(
        target=serve,
        args=(target, port, parent, ready, inspector, request_timeout),
        daemon=True,
    )
    server.start()
    ready.wait(10)
    url = inspector.url("/session/" + target.name) if target.is_file() else inspector.url()
    _say(f"acp-proxy inspect: {url}")
    # (stopped as by Ctrl-C, so that what it made is removed: run --inspect terminates it)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    with contextlib.ExitStack() as cleanup:
        if open_browser:
            import webbrowser

            try:
                page = cleanup.enter_context(redirect_file(url))
            except OSError as exc:
                _say(f"acp-proxy inspect: cannot make the page to open: {exc.strerror or exc}")
            else:
                webbrowser.open(page.as_uri())
        while server.is_alive():  # (Ctrl-C: exit 130, as every command; the stack cleans up)
            server.join(0.5)


@cli.command()
@click.argument("pattern")
@click.argument("paths", nargs=-1, metavar="[DIR|FILES...]")
@click.option("--method", metavar="GLOB", help="Only frames whose method matches.")
@click.option("--rule", metavar="GLOB", help="Only frames with a finding of a matching rule.")
@click.option(
    "--from", "side", type=click.Choice(["client", "agent"]), help="Only frames sent by that side."
)
@click.option("--session", metavar="ID", help="Only frames of that session.")
@click.option("-i", "--ignore-case", is_flag=True, help="Match PATTERN without regard to case.")
@click.option("-l", "files_only", is_flag=True, help="Print only the names of files with a match.")
@_json_option("text: PATH:LINE: seq SEQ: SUMMARY lines; json: an object per match.")
def search(
    pattern: str,
    paths: tuple[str, ...],
    method: str | None,
    rule: str | None,
    side: str | None,
    session: str | None,
    ignore_case: bool,
    files_only: bool,
    fmt: str,
    legacy_json: bool,
) -> None:
    """The frames across recordings whose method, update variant, rule or text matches
    PATTERN (a regular expression), grep-style: PATH:LINE: seq SEQ: METHOD SUMMARY. Default: the
    recordings directory. Exit 0 when something matched, 1 when nothing did, 2 on error.
    """
    as_json = _json_wanted(fmt, legacy_json)
    if files_only and as_json:
        raise click.UsageError("--format json has no effect with -l (it prints file names)")
    import re

    from acp_proxy.readers.catalog import Hit, recordings_in
    from acp_proxy.readers.catalog import search as find

    try:
        re.compile(pattern)
    except re.error as exc:
        raise click.BadParameter(f"{pattern!r}: {exc}", param_hint="PATTERN") from None
    files, problems = recordings_in(_targets(paths))
    for problem in problems:
        _say(f"acp-proxy: {problem}")
    matched, named = False, set()
    with _output("never") as emit:
        for hit in find(pattern, files, method, rule, side, session, ignore_case, files_only):
            if not isinstance(hit, Hit):
                _say(f"acp-proxy: {hit}")
                continue
            matched = True
            # (a newline in a file name, a rule or a finding makes no line of its own)
            if files_only:
                if hit.path not in named:
                    named.add(hit.path)
                    emit(visible(hit.path))
            elif as_json:
                emit(dumps(hit.as_json()).decode())
            else:
                seq = "-" if hit.seq is None else hit.seq
                rules = f"  [{', '.join(hit.rules)}]" if hit.rules else ""
                emit(visible(f"{hit.path}:{hit.line}: seq {seq}: {hit.summary}{rules}"))
    sys.exit(0 if matched else 2 if problems and not files else 1)


@contextlib.contextmanager
def _output(color: str, live: bool = False) -> Iterator[Callable[[str], None]]:
    """The one output path for text. Lines are written in blocks (a write per line
    costs more than rendering it, and one system call each when PYTHONUNBUFFERED is
    set), or each at once when ``live``; coloured as ``color`` (``--color``) says."""
    stream = sys.stdout
    keep = _colored(color)
    pending: list[str] = []

    def write() -> None:
        pending.append("")
        stream.write("\n".join(pending))
        pending.clear()
        stream.flush()

    def emit(line: str) -> None:
        # Wire strings were escaped where they were put in; without colour, nothing but
        # text is left to write, so whatever control is in the line is shown as an escape.
        if not keep:
            line = visible(click.unstyle(line) if "\x1b" in line else line, lines=True)
        pending.append(line)
        if live or len(pending) >= _BLOCK:
            write()

    try:
        yield emit
    finally:
        if pending:
            write()


def _colored(color: str, stream: Any = None) -> bool:
    """Whether ``stream`` (stdout by default) is coloured: as ``--color`` says; ``auto``
    only on a terminal, and not when ``NO_COLOR`` is set (no-color.org)."""
    ctx = click.get_current_context(silent=True)
    if color == "never" or (ctx is not None and ctx.meta.get("acp_proxy.no_color")):
        return False
    if color == "always":
        return True
    stream = sys.stdout if stream is None else stream
    return not os.environ.get("NO_COLOR") and bool(getattr(stream, "isatty", bool)())


#: Lines written at once by :func:`_output`.
_BLOCK = 1024


def _complain(exc: RecordingError) -> None:
    _say(f"acp-proxy: {exc}")


def _filter_options(func: Any) -> Any:
    func = _color_option("Colour findings and directions")(func)
    func = click.option(
        "--violations", is_flag=True, help="Only frames with findings, and standalone findings."
    )(func)
    func = click.option("--session", metavar="ID", help="Only frames of this session.")(func)
    func = click.option(
        "--method",
        metavar="PATTERN",
        help="Only frames of methods matching this glob (a response matches its request's).",
    )(func)
    func = click.option(
        "--from",
        "side",
        type=click.Choice(["client", "agent"]),
        help="Only frames sent by this side.",
    )(func)
    return func


@cli.command()
@click.argument("recording", metavar="RECORDING")
@click.option(
    "--conversation",
    is_flag=True,
    help="Show the session as a client would render it, turn by turn.",
)
@_json_option("json: the conversation's reconstructed state (implies --conversation).")
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
@_filter_options
def show(
    recording: str,
    conversation: bool,
    fmt: str,
    legacy_json: bool,
    revalidate: bool,
    seq: int | None,
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
    """
    as_json = _json_wanted(fmt, legacy_json)
    import orjson

    from acp_proxy.readers.annotate import RUN, annotate_lines, open_lines
    from acp_proxy.readers.conversation import Conversation
    from acp_proxy.readers.summary import TimelineFilter
    from acp_proxy.readers.text import Timeline

    if seq is not None:
        if conversation or as_json:
            raise click.UsageError("--seq shows one frame: not with --conversation or --json")
        _only_with("with --seq", "side", "method", "session", "violations")
        _show_frame(recording, seq, revalidate, color)
        return
    if conversation or as_json:
        from acp_proxy.readers.text import conversation_lines

        # the whole file is read before anything is shown: a streamed turn's chunks are
        # taken in runs, known by their bytes (annotate_lines)
        items = annotate_lines(open_lines(recording), validate=False, run=RUN)
        connections = Conversation.per_connection(items)
        if as_json:
            document = Conversation.document(connections, session)
            with _output("never") as emit:
                emit(dumps(document, option=orjson.OPT_INDENT_2).decode())
            return
        with _output(color) as emit:
            for line in conversation_lines(connections, session):
                emit(line)
        return
    only = TimelineFilter(side, method, session, violations)
    # A regular file is read to its end without waiting: lines go out in blocks. From a
    # pipe, each line goes out as soon as it is read. A streamed turn's chunks are known
    # by their bytes (annotate_lines).
    lines = open_lines(recording)
    live = not Path(recording).is_file()
    with _output(color, live=live) as emit:
        timeline = Timeline(emit, only, _colored(color))
        timeline.feed(annotate_lines(lines, stored=not revalidate, run=1 if live else RUN))


def _show_frame(recording: str, seq: int, revalidate: bool, color: str) -> None:
    """``show --seq N``: frame N of each connection, whole; exit 1 if there is none."""
    import orjson

    from acp_proxy.readers.annotate import annotate, open_recording
    from acp_proxy.transcript.records import FrameRecord

    found = False
    with _output(color) as emit:
        for item in annotate(open_recording(recording), stored=not revalidate):
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
        _say(f"acp-proxy: {recording} has no frame with seq {seq}")
        sys.exit(1)


@cli.command()
@click.argument("path", metavar="PATH")
@_filter_options
@click.option(
    "--revalidate",
    is_flag=True,
    help="Recompute the findings with today's rules instead of showing the recorded ones.",
)
@click.option(
    "--interval",
    type=_Seconds(low=0.01, high=3600.0),
    default=0.2,
    show_default=True,
    help="Seconds between checks for new records.",
)
def follow(
    path: str,
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
    followed, and each new one as new sessions start. Ctrl-C stops.
    """
    from acp_proxy.readers.annotate import annotate
    from acp_proxy.readers.follow import follow_records
    from acp_proxy.readers.summary import TimelineFilter
    from acp_proxy.readers.text import Timeline

    target = Path(path)
    if not target.exists():
        raise _Unreadable(f"cannot follow {path}: No such file or directory")
    only = TimelineFilter(side, method, session, violations)

    try:
        with _output(color, live=True) as emit:
            timeline = Timeline(emit, only, _colored(color))

            def switched(current: Path) -> None:
                emit(click.style(visible(f"==> following {current}"), bold=True))

            records = follow_records(target, switched, interval)
            timeline.feed(annotate(records, stored=not revalidate))
    except OSError as exc:
        raise _Unreadable(f"cannot follow {path}: {exc.strerror}") from None


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


@cli.command()
@click.argument("a", metavar="A")
@click.argument("b", metavar="B")
@_format_option("text: grouped by layer and turn; json: one document, for tools.")
@click.option(
    "--only",
    "only",
    callback=_layers,
    metavar="LAYERS",
    help="Compare only these layers (comma-separated): handshake, conversation, wire, "
    "findings, timing.",
)
@_connection_options(" (the same number on both sides)")
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
    type=_Seconds(low=1.0, high=1000.0, open_low=True),
    default=1.5,
    show_default=True,
    help="Timing: flag a median only this many times slower or faster (and 50 ms apart).",
)
@_color_option("Colour the layers' headings")
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
    color: str,
) -> None:
    """What changed between two recorded sessions, A and B: the handshake, the conversation,
    the wire, the findings and the timing. Ids and times are normalised first, so two runs of
    one scenario compare equal.

    Exit status, as diff(1): 0 no layer differs, 1 they differ, 2 a file cannot be read.
    """
    import orjson

    from acp_proxy.readers.diff import compare, lines, load

    sides = []
    numbers = [_connection(path, connection, session_id) for path in (a, b)]
    session = numbers[0] if numbers[0] == numbers[1] else numbers
    for path, number in zip((a, b), numbers, strict=True):
        try:
            sides.append(load(path, number, ignore, meta))
        except ValueError as exc:
            raise _Unreadable(str(exc)) from None
    found = compare(sides[0], sides[1], only, slower)
    with _output(color) as emit:
        if fmt == "json":
            document = {
                "a": a,
                "b": b,
                "session": session,
                "sessions": {"a": sides[0].connections, "b": sides[1].connections},
                "identical": not found,
                "differences": [d.as_json() for d in found],
            }
            emit(dumps(document, option=orjson.OPT_INDENT_2).decode())
        else:
            for line in lines(found, (sides[0].connections, sides[1].connections)):
                styled = line.endswith(":") and not line.startswith(" ")
                emit(click.style(visible(line), bold=True) if styled else visible(line))
    sys.exit(1 if found else 0)


@cli.command()
@click.argument("recordings", nargs=-1, required=True, metavar="RECORDING...")
@_format_option("How to print the figures.")
def stats(recordings: tuple[str, ...], fmt: str) -> None:
    """Figures about recorded sessions: traffic, methods, latency, turns, findings."""
    import orjson

    from acp_proxy.readers.annotate import RUN, annotate_lines, open_lines
    from acp_proxy.readers.stats import Stats

    figures = Stats()
    for path in recordings:
        figures.feed(annotate_lines(open_lines(path), run=RUN))  # (see show --conversation)
    with _output("never") as emit:
        if fmt == "json":
            emit(dumps(figures.as_json(), option=orjson.OPT_INDENT_2).decode())
        else:
            for line in figures.lines():
                emit(line)


@cli.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="How to print the catalog.",
)
@click.argument("rule", required=False, metavar="[RULE]")
def rules(fmt: str, rule: str | None) -> None:
    """Print the catalog of rules the validator checks, and the schemas it checks against
    (text and markdown: a first line; json: each line's "schemas"); with RULE, that rule
    explained: its level, versions, source, what it flags, and an example of a frame that
    breaks it."""
    from acp_proxy.core.rules import RULES, catalog_lines, explain_lines

    if rule is None:
        lines = catalog_lines(fmt)
    else:
        if _given("fmt"):
            raise click.UsageError("--format is for the catalog, not one RULE")
        explained = explain_lines(rule)
        if explained is None:
            import difflib

            close = difflib.get_close_matches(rule, list(RULES), n=3)
            hint = f" (did you mean {', '.join(close)}?)" if close else ""
            raise click.BadParameter(
                visible(f"{rule!r} is no rule{hint}; `acp-proxy rules` lists them"),
                param_hint="RULE",
            )
        lines = explained
    with _output("never") as emit:
        for line in lines:
            emit(line)


@cli.command()
@click.option(
    "--record",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    help="Where to write the demo's transcript. Default: a new file in the recordings directory.",
)
@click.option(
    "--delay",
    type=_Seconds(high=60.0),
    default=0.02,
    show_default=True,
    help="Seconds between the example agent's streamed chunks.",
)
@click.option(
    "--scenario",
    type=click.Choice(["tour", "clean", "cancelled", "misbehaving", "v1", "v1-tour"]),
    default="tour",
    show_default=True,
    help="tour: a prompt, then a cancelled prompt. clean: one prompt. cancelled: one "
    "cancelled prompt. misbehaving: the example agent breaks the protocol on purpose. "
    "v1: one prompt over ACP v1, as most shipping agents speak it. v1-tour: v1 with a mode "
    "switch, a file read, a terminal, and a second prompt that is cancelled.",
)
@_color_option("Colour the conversation")
def demo(record: str | None, delay: float, scenario: str, color: str) -> None:
    """Try the proxy: run the example agent behind it and drive one session.

    Nothing else needs to be installed: the agent and the client are both
    part of acp-proxy.
    """
    from acp_proxy.devtools.demo import run_demo
    from acp_proxy.live.recorder import default_record_dir, recording_name

    path = Path(record) if record is not None else default_record_dir() / recording_name("demo")
    click.echo(
        visible(
            f"acp-proxy demo: the example agent runs behind `acp-proxy run`; recording to {path}"
        )
    )
    if record is not None and not path.parent.is_dir():
        click.echo(visible(f"acp-proxy demo: creating the directory {path.parent} (mode 0700)"))
    click.echo()
    try:
        status = run_demo(path, delay=delay, scenario=scenario)
    except (OSError, EOFError, ValueError, KeyError) as exc:
        _say(f"acp-proxy demo: the session failed: {exc}")
        sys.exit(1)
    from acp_proxy.devtools.demo import report_lines

    with _output(color) as emit:
        for line in report_lines(path, status):
            emit(line)
    if not path.exists():
        sys.exit(1)
    sys.exit(status)


def _probe_checks(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[str, ...]:
    from acp_proxy.drive.probe import CHECK_NAMES

    for name in value:
        if name not in CHECK_NAMES:
            raise click.BadParameter(
                f"no check {visible(name)!r} (one of: {', '.join(CHECK_NAMES)}; see probe --list)"
            )
    return value


@cli.command(context_settings={"allow_interspersed_args": False})
@click.option(
    "--protocol",
    type=click.Choice(["1", "2"]),
    default="1",
    show_default=True,
    help="The ACP version to ask for (1: what shipping agents speak).",
)
@click.option(
    "--prompt",
    "prompt_text",
    metavar="TEXT",
    help="The prompt of the prompt turn. Default: a short, harmless one.",
)
@click.option(
    "--timeout",
    type=_Seconds(open_low=True, high=3600.0),
    default=30.0,
    show_default=True,
    help="Seconds each step may take (a response, a turn).",
)
@click.option(
    "--permissions",
    type=click.Choice(["allow", "reject", "cancel"]),
    default="reject",
    show_default=True,
    help="How the agent's permission requests are answered.",
)
@click.option(
    "--allow-terminal",
    is_flag=True,
    help="Offer a terminal: run the commands the agent asks for, in the scratch "
    "directory. Off by default: no command runs.",
)
@click.option("--auth", metavar="METHOD", help="Authenticate with this of the agent's methods.")
@click.option(
    "--only",
    multiple=True,
    metavar="CHECK",
    callback=_probe_checks,
    help="Run only this check (repeatable).",
)
@click.option(
    "--skip",
    multiple=True,
    metavar="CHECK",
    callback=_probe_checks,
    help="Leave this check out (repeatable).",
)
@click.option(
    "--list", "list_checks", is_flag=True, help="List the checks and the spec page each comes from."
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "junit"]),
    default="text",
    show_default=True,
    help="text: a line per check; json: one document; junit: a test case per check.",
)
@click.option(
    "--record",
    metavar="PATH",
    envvar=_env("RECORD"),
    help="Where the session is recorded, as for run. Default: the recordings directory.",
)
@click.option("--no-record", is_flag=True, help="Do not record the session.")
@click.option(
    "--grace",
    type=_Seconds(high=60.0),
    default=2.0,
    show_default=True,
    help="Seconds the agent gets to exit at the end, before SIGTERM, then SIGKILL.",
)
@_color_option("Colour the checks' statuses")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- AGENT [ARGS]...")
def probe(
    protocol: str,
    prompt_text: str | None,
    timeout: float,
    permissions: str,
    allow_terminal: bool,
    auth: str | None,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    list_checks: bool,
    fmt: str,
    record: str | None,
    no_record: bool,
    grace: float,
    color: str,
    command: tuple[str, ...],
) -> None:
    """Check an agent without an editor: start AGENT behind the proxy (recorded and
    validated as by run), play the client, and run the checks (see --list).

    \b
    Exit status: 0 no check failed, 1 a check failed, 2 the probe could not run."""
    from acp_proxy.drive import probe as probing

    if list_checks:
        if command:
            raise click.UsageError("--list takes no AGENT")
        with _output("never") as emit:
            for line in probing.list_lines():
                emit(line)
        return
    if not command:
        raise click.UsageError("probe needs the agent to run: -- AGENT [ARGS]...")
    if record is not None and no_record:
        raise click.UsageError("--record and --no-record contradict each other")
    from acp_proxy.live.spawn import AgentNotExecutable, AgentNotFound

    configure("warning", "console", _open_log(None))
    options = probing.Options(
        protocol=int(protocol),
        prompt=prompt_text or probing.DEFAULT_PROMPT,
        timeout=timeout,
        permissions=permissions,
        allow_terminal=allow_terminal,
        auth=auth,
        only=only,
        skip=skip,
        record=record,
        no_record=no_record,
        grace=grace,
    )
    if allow_terminal:
        _say(
            "acp-proxy probe: --allow-terminal: commands the agent asks for WILL RUN "
            "(in the probe's scratch directory)"
        )
    try:
        result = probing.probe(
            list(command), options, get_logger(), say=lambda line: _say(f"acp-proxy probe: {line}")
        )
    except AgentNotFound:
        _say(f"acp-proxy probe: agent command not found: {command[0]}")
        sys.exit(2)
    except AgentNotExecutable as exc:
        _say(f"acp-proxy probe: agent command cannot be executed: {exc}")
        sys.exit(2)
    except KeyboardInterrupt:
        _exit(130)
    _probe_output(result, fmt, color)
    _exit(1 if result.failed else 0)


def _probe_output(result: ProbeResult, fmt: str, color: str) -> None:
    """probe's report on stdout: text (coloured as ``--color`` says), json, junit."""
    from acp_proxy.drive import probe as probing

    if fmt == "json":
        import orjson

        with _output("never") as emit:
            emit(dumps(result.as_json(), option=orjson.OPT_INDENT_2).decode())
        return
    if fmt == "junit":
        from acp_proxy.readers.ci import junit_checks

        with _output("never") as emit:
            emit(junit_checks("acp-proxy probe", probing.junit_cases(result)))
        return
    colour = _colored(color)

    def style(text: str, name: str) -> str:
        return click.style(text, fg=name, bold=True) if colour else text

    with _output("always" if colour else "never") as emit:
        for line in probing.text_lines(result, style):
            emit(line)


@cli.command(context_settings={"allow_interspersed_args": False})
@click.option(
    "--protocol",
    type=click.Choice(["1", "2"]),
    default="1",
    show_default=True,
    help="The ACP version to ask for (1: what shipping agents speak).",
)
@click.option(
    "--cwd",
    type=click.Path(exists=True, file_okay=False, resolve_path=True),
    help="The session's working directory, and the only one the agent's fs requests may "
    "touch. Default: the current directory.",
)
@click.option("--session", "session_id", metavar="ID", help="Load or resume this session.")
@click.option(
    "--timeout",
    type=_Seconds(open_low=True, high=86_400.0),
    default=120.0,
    show_default=True,
    help="Seconds to wait for a response or, in a turn, for the agent's next message (then "
    "the turn is cancelled, and given up after as long again).",
)
@click.option(
    "--permissions",
    type=click.Choice(["allow", "reject"]),
    default="reject",
    show_default=True,
    help="How permission requests are answered when stdin is not a terminal (on one, "
    "you are asked).",
)
@click.option(
    "--allow-terminal",
    is_flag=True,
    help="Offer a terminal: run the commands the agent asks for, in --cwd. Off by default.",
)
@click.option(
    "--record",
    metavar="PATH",
    envvar=_env("RECORD"),
    help="Where the session is recorded, as for run. Default: the recordings directory.",
)
@click.option("--no-record", is_flag=True, help="Do not record the session.")
@click.option(
    "--grace",
    type=_Seconds(high=60.0),
    default=2.0,
    show_default=True,
    help="Seconds the agent gets to exit at the end, before SIGTERM, then SIGKILL.",
)
@_color_option("Colour the conversation")
@click.argument("command", nargs=-1, type=click.UNPROCESSED, metavar="-- AGENT [ARGS]...")
def chat(
    protocol: str,
    cwd: str | None,
    session_id: str | None,
    timeout: float,
    permissions: str,
    allow_terminal: bool,
    record: str | None,
    no_record: bool,
    grace: float,
    color: str,
    command: tuple[str, ...],
) -> None:
    """Talk to AGENT (started behind the proxy, recorded and validated as by run): each
    line a prompt. On a terminal, the reply is drawn as it streams and permission requests
    are asked (Ctrl-C cancels a turn, /help lists the commands); piped, only the agent's
    text is written, on stdout.

    \b
    Exit status: 0; 1 a turn failed, a finding was an error, or the agent is gone; 2 usage,
    or the agent cannot start; 130 Ctrl-C.
    """
    if not command:
        raise click.UsageError("chat needs the agent to run: -- AGENT [ARGS]...")
    if record is not None and no_record:
        raise click.UsageError("--record and --no-record contradict each other")
    interactive = sys.stdin.isatty()
    if interactive:
        _only_with("when stdin is not a terminal (on one, you are asked)", "permissions")
    from acp_proxy.drive import chat as chatting
    from acp_proxy.live.spawn import AgentNotExecutable, AgentNotFound

    configure("warning", "console", _open_log(None))
    options = chatting.Options(
        cwd=Path(cwd or os.getcwd()),
        protocol=int(protocol),
        session=session_id,
        timeout=timeout,
        permissions=permissions,
        allow_terminal=allow_terminal,
        record=record,
        no_record=no_record,
        grace=grace,
    )
    if allow_terminal:
        _say(f"acp-proxy chat: --allow-terminal: the agent's commands WILL RUN (in {options.cwd})")
    try:
        status = chatting.chat(
            list(command),
            options,
            get_logger(),
            interactive=interactive,
            colour=_colored(color),
            err_colour=_colored(color, sys.stderr),
        )
    except AgentNotFound:
        _say(f"acp-proxy chat: agent command not found: {command[0]}")
        _exit(2)
    except AgentNotExecutable as exc:
        _say(f"acp-proxy chat: agent command cannot be executed: {exc}")
        _exit(2)
    _exit(status)


#: What every command's ``--help`` ends with: two or three commands to copy.
_EXAMPLES = {
    "run": ["acp-proxy run -- my-agent --acp", "acp-proxy run --record out/ --redact -- my-agent"],
    "replay": [
        "acp-proxy replay session.jsonl",
        "acp-proxy replay --as client session.jsonl -- my-agent --acp",
        "acp-proxy replay --connection 2 --speed 0 sessions.jsonl",
    ],
    "report": [
        "acp-proxy report session.jsonl",
        "acp-proxy report session.jsonl -o - | gzip > s.html.gz",
    ],
    "redact": [
        "acp-proxy redact session.jsonl -o shared.jsonl",
        "acp-proxy redact --contents session.jsonl -o -",
    ],
    "validate": [
        "acp-proxy validate session.jsonl",
        "acp-proxy validate --by-rule out/*.jsonl",
        "acp-proxy validate --format junit out/*.jsonl > junit.xml",
    ],
    "ls": [
        "acp-proxy ls",
        "acp-proxy ls --with-findings --since 2d",
        "acp-proxy ls --prune --keep-days 30 --dry-run",
    ],
    "inspect": ["acp-proxy inspect", "acp-proxy inspect --open session.jsonl"],
    "search": [
        "acp-proxy search session/request_permission",
        "acp-proxy search --rule 'message-id-*' out/",
        "acp-proxy search -l --from client README",
    ],
    "show": [
        "acp-proxy show session.jsonl",
        "acp-proxy show --violations --from agent session.jsonl",
        "acp-proxy show --seq 12 session.jsonl",
    ],
    "follow": [
        "acp-proxy follow ~/.local/state/acp-proxy/recordings",
        "acp-proxy follow --violations session.jsonl",
    ],
    "diff": [
        "acp-proxy diff before.jsonl after.jsonl",
        "acp-proxy diff --only conversation,findings a.jsonl b.jsonl",
        "acp-proxy diff --session sess_1 --format json a.jsonl b.jsonl",
    ],
    "stats": ["acp-proxy stats session.jsonl", "acp-proxy stats --format json out/*.jsonl"],
    "rules": [
        "acp-proxy rules",
        "acp-proxy rules message-id-missing",
        "acp-proxy rules --format markdown",
    ],
    "probe": [
        "acp-proxy probe -- my-agent --acp",
        "acp-proxy probe --only prompt --only cancel -- my-agent",
        "acp-proxy probe --format junit -- my-agent > probe.xml",
    ],
    "chat": [
        "acp-proxy chat -- my-agent --acp",
        "acp-proxy chat --protocol 2 --cwd ~/src/app -- my-agent",
        "acp-proxy chat --permissions allow -- my-agent < prompts.txt > replies.txt",
    ],
    "demo": ["acp-proxy demo", "acp-proxy demo --scenario misbehaving --record /tmp/demo.jsonl"],
}
for _name, _lines in _EXAMPLES.items():
    cli.commands[_name].epilog = "\b\nExamples:\n" + "\n".join(f"  {line}" for line in _lines)


def main() -> None:
    """Entry point: the click group, plus a quiet exit when stdout is closed early.

    ``acp-proxy validate big.jsonl | head`` closes our stdout; that is not an
    error worth a traceback.
    """
    try:
        try:
            cli(standalone_mode=True)
        finally:
            sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    except KeyboardInterrupt:
        _interrupted()
