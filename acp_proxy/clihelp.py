"""What the commands share: the parameter types (seconds, sizes, ``--color``, the logging
options), the one output path for text, the one-line messages and exits, and the exit
statuses. Any layer's ``commands`` module may import it; it imports click, ``log`` and
``core.visible`` and, inside the functions that need them, the readers' size parsing and
pruning (so that a command's import stays cheap: `run` starts the agent first). Its names
keep their underscore: they are the CLI's, not the Python API."""

from __future__ import annotations

import contextlib
import gc
import math
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, NoReturn

import click

from acp_proxy.core.visible import visible
from acp_proxy.log import LEVELS, Logger, LogStream, open_log

if TYPE_CHECKING:
    import subprocess

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


def _size(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    if value is None:  # (run calls this too: nothing more is loaded before the agent starts)
        return None
    from acp_proxy.readers.catalog import parse_size

    try:
        return parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def _prune(log: Logger, keep_days: float | None, keep_size: int | None) -> None:
    """Tidy the default recordings directory as a session starts; never raises. (Here,
    not beside ``run``: the proxy shell imports no reader.)"""
    from acp_proxy.readers.catalog import prune
    from acp_proxy.transcript.names import default_record_dir

    try:
        for removed in prune(default_record_dir(), keep_days, keep_size):
            log.info("removed an old recording", path=str(removed))
    except Exception as exc:  # tidying must never cost the session
        log.warning("could not tidy the recordings directory", error=repr(exc))


def _say(message: str) -> None:
    """One line for the user on stderr, its wire strings escaped; never raises (stderr may
    be gone: the client that started us went away). A line of the running command's said
    as ``acp-proxy: ...`` is said as ``acp-proxy COMMAND: ...``."""
    if message.startswith("acp-proxy: "):
        message = f"{_who()}{message.removeprefix('acp-proxy')}"
    with contextlib.suppress(OSError, ValueError):
        click.echo(visible(message), err=True)


def _who() -> str:
    """``acp-proxy COMMAND``: the command running, if any."""
    ctx = click.get_current_context(silent=True)
    while ctx is not None and ctx.parent is not None and ctx.parent.parent is not None:
        ctx = ctx.parent
    if ctx is not None and ctx.parent is not None and ctx.info_name:
        return f"acp-proxy {ctx.info_name}"
    if ctx is not None and ctx.invoked_subcommand:
        return f"acp-proxy {ctx.invoked_subcommand}"
    return "acp-proxy"


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


def _not_stdout(why: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """An option naming a file that ``-`` (standard output, as elsewhere) cannot be:
    ``--record -`` or ``--log-file -`` would write into what stdout carries."""

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value == "-":
            raise click.BadParameter(f"'-' would be standard output, {why}")
        return value

    return check


def _env(name: str) -> str:
    return f"ACP_PROXY_{name}"


#: What ``--record -`` is told (a recording is a file: stdout is the protocol's, or the
#: command's own output).
NOT_A_RECORDING_PLACE = "which a recording never goes to: name a file or a directory"

#: What ``--color`` takes: auto (on a terminal, unless NO_COLOR is set or TERM is dumb),
#: always, never.
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
            help=f"{description}: auto (only on a terminal, not when NO_COLOR is set or "
            "TERM=dumb), always or never.",
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
        callback=_not_stdout("which logs never go to: leave --log-file out to log to stderr"),
        help="Append logs to this file instead of stderr.",
    )(func)
    return func


def _deprecated(old: str, new: str) -> None:
    """An older spelling still works, and says (once) what to write instead."""
    if old not in _SAID:
        _SAID.add(old)
        _say(f"acp-proxy: {old} is deprecated: use {new}")


#: The deprecation notes given so far.
_SAID: set[str] = set()


def _cannot_write(path: str, exc: OSError) -> NoReturn:
    """A file that could not be written: one line, exit 1; but stdout (``-o -``) closed by
    its reader (``| head``) is no error: it goes on to the quiet exit of a closed stdout."""
    if path == "-" and isinstance(exc, BrokenPipeError):
        raise exc
    raise click.ClickException(visible(f"cannot write {path}: {exc.strerror}")) from None


class _Unreadable(click.ClickException):
    """A recording that cannot be read: exit status 2, one clear line."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        _say(f"acp-proxy: {self.message}")


@contextlib.contextmanager
def _output(color: str, live: bool = False) -> Iterator[Callable[[str], None]]:
    """The one output path for text. Lines are written in blocks (a write per line
    costs more than rendering it, and one system call each when PYTHONUNBUFFERED is
    set), or each at once when ``live``; coloured as ``color`` (``--color``) says."""
    keep = _colored(color)
    pager = _pager()
    stream: Any = sys.stdout
    if pager is not None and pager.stdin is not None:
        encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
        import io  # (only when paging)

        stream = io.TextIOWrapper(pager.stdin, encoding=encoding, errors="replace")
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

    if pager is None:
        try:
            yield emit
        finally:
            if pending:
                write()
        return
    try:
        yield emit
        if pending:
            write()
    except BrokenPipeError:  # the reader quit the pager before the end: no error, as git
        pass
    finally:
        with contextlib.suppress(OSError, ValueError):
            stream.close()
        with contextlib.suppress(KeyboardInterrupt):
            pager.wait()


def _pager_option(func: Any) -> Any:
    """``--no-pager``: the command's output paged on a terminal (:func:`_pager`) unless
    this says not to."""
    return click.option(
        "--no-pager",
        is_flag=True,
        expose_value=False,
        callback=_pager_wanted,
        help="Do not page the output (on a terminal it goes through $PAGER, else less -R).",
    )(func)


def _pager_wanted(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    ctx.meta["acp_proxy.pager"] = not value


def _pager() -> subprocess.Popen[bytes] | None:
    """The pager the output goes through, as git's: on a terminal only, for the commands
    that page (``show``, ``diff``, ``rules``: :func:`_pager_option`), unless ``--no-pager``;
    ``$PAGER`` (run by the shell, as git runs it), else ``less -R``; ``$LESS`` set to
    ``FRX`` where unset (one screen: no pager; colours kept). ``PAGER=`` or ``cat``: none."""
    ctx = click.get_current_context(silent=True)
    if ctx is None or not ctx.meta.get("acp_proxy.pager"):
        return None
    try:
        if not sys.stdout.isatty():
            return None
    except (OSError, ValueError, AttributeError):
        return None
    command = os.environ.get("PAGER", "less -R").strip()
    if not command or command == "cat":
        return None
    import subprocess  # (only on a terminal)

    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    try:
        # (the user's $PAGER, run by the shell as git runs it)
        return subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    except OSError:
        return None


def _colored(color: str, stream: Any = None) -> bool:
    """Whether ``stream`` (stdout by default) is coloured: as ``--color`` says; ``auto``
    only on a terminal, not when ``NO_COLOR`` is set (no-color.org), and not on a terminal
    that says it shows none (``TERM=dumb``, as git and ripgrep)."""
    ctx = click.get_current_context(silent=True)
    if color == "never" or (ctx is not None and ctx.meta.get("acp_proxy.no_color")):
        return False
    if color == "always":
        return True
    stream = sys.stdout if stream is None else stream
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(stream, "isatty", bool)())


#: Lines written at once by :func:`_output`.
_BLOCK = 1024


def _settle() -> None:
    """What exists now (modules, click, compiled checks) is never garbage: it leaves
    the cycle collector's scans."""
    gc.freeze()


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
