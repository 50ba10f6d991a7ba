"""What the commands share: how a command is declared (:func:`command`: its options, help,
few words and examples in one place), the parameter types (seconds, sizes, ages, ``--color``,
the logging options), the one output path for text, the one-line messages and exits, and the
exit statuses. Any layer's ``commands`` package may import it; it imports only click, ``log``
and ``core`` (so that a command's import stays cheap, `run` starting the agent first, and a
command reaches no layer above its own through it).
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import TYPE_CHECKING, Any, NoReturn

import click

from acp_proxy.core.times import parse_age
from acp_proxy.core.visible import visible
from acp_proxy.log import LEVELS

if TYPE_CHECKING:
    import subprocess

#: Exit statuses of ``run`` when the agent cannot be started (as a shell does).
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126
#: Exit status of ``run`` when the proxy itself fails (a bug: please report it).
EXIT_PROXY_FAILED = 70
#: Exit status of a command stopped by Ctrl-C (SIGINT), as a shell's.
EXIT_INTERRUPTED = 130


class Command(click.Command):
    """A command of acp-proxy: besides its options and its help (the docstring), its few
    words for the group's list (``short_help``) and the two or three command lines its
    ``--help`` ends with (``examples``), all given where it is defined (:func:`command`)."""

    def __init__(self, *args: Any, examples: Sequence[str] = (), **settings: Any) -> None:
        self.examples = tuple(examples)
        if self.examples:
            lines = "\n".join(f"  {line}" for line in self.examples)
            settings.setdefault("epilog", f"\b\nExamples:\n{lines}")
        super().__init__(*args, **settings)


def command(
    name: str | None = None,
    *,
    short: str,
    examples: Sequence[str],
    cls: type[Command] = Command,
    **settings: Any,
) -> Callable[[Callable[..., Any]], Command]:
    """``@click.command``, with what the command says about itself in one place: ``short``,
    its few words for ``acp-proxy --help`` (the docstring's first sentence would be cut at
    the terminal's width), and ``examples``, what its ``--help`` ends with."""
    return click.command(name, cls=cls, short_help=short, examples=examples, **settings)


def format_option(description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--format text|json`` (the value is the parameter ``fmt``)."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(["text", "json"]),
        default="text",
        show_default=True,
        help=description,
    )


def json_format_option(description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """``--format text|json`` and ``--json``, hidden: its older spelling (the parameter
    ``legacy_json``; :func:`wants_json` reads the two)."""

    def add(func: Any) -> Any:
        func = click.option("--json", "legacy_json", is_flag=True, hidden=True)(func)
        return format_option(description)(func)

    return add


def wants_json(fmt: str, legacy_json: bool) -> bool:
    """Whether :func:`json_format_option` asked for JSON (``--json`` said deprecated)."""
    if legacy_json:
        warn_deprecated("--json", "--format json")
    return legacy_json or fmt == "json"


class Seconds(click.ParamType):  # type: ignore[type-arg]  # (generic from click 8.2)
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


_SIZE_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


#: The largest SIZE taken (a pebibyte: more than any disk).
MAX_SIZE = 1 << 50


def parse_size(text: str) -> int:
    """``500M``, ``2G``, ``100k``, ``1024`` (bytes)."""
    found = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*", text.lower())
    if found is None:
        raise ValueError(f"{text!r} is not a size (500M, 2G)")
    size = float(found.group(1)) * _SIZE_UNITS[found.group(2)]
    if not math.isfinite(size) or size > MAX_SIZE:
        shown = text if len(text) <= 40 else f"{text[:40]}…"
        raise ValueError(f"{shown!r} is too large a size: at most 1024T")
    return int(size)


def as_size(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """An option's SIZE (500M, 2G) in bytes (a callback: ``--keep-size``)."""
    if value is None:
        return None
    try:
        return parse_size(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def as_age(ctx: click.Context, param: click.Parameter, value: str | None) -> timedelta | None:
    """An option's AGE (2d, 12h) as a span of time (a callback: ``ls --since``)."""
    try:
        return None if value is None else parse_age(value)
    except ValueError as exc:
        raise click.BadParameter(str(exc)) from None


def say(message: str) -> None:
    """One line for the user on stderr, its wire strings escaped; never raises (stderr may
    be gone: the client that started us went away). A line of the running command's said
    as ``acp-proxy: ...`` is said as ``acp-proxy COMMAND: ...``."""
    if message.startswith("acp-proxy: "):
        message = f"{_who()}{message.removeprefix('acp-proxy')}"
    with contextlib.suppress(OSError, ValueError):
        click.echo(visible(message), err=True)


def not_found(command: str, editor: bool = False) -> str:
    """An agent command that is not found, in words that say where it was looked for: a
    bare name on PATH, which an editor (``run``'s caller) sets its own way."""
    said = f"agent command not found: {command}"
    if "/" not in command:
        said += " (not on PATH" + (
            "; an editor has its own PATH: give the absolute path)" if editor else ")"
        )
    return said


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


def exit_with(status: int) -> NoReturn:
    """Exit with ``status`` whatever happened to stderr (Python makes a failed flush of it
    at exit status 120)."""
    try:
        sys.stderr.flush()
    except (OSError, ValueError):
        with contextlib.suppress(OSError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - for the interpreter's exit
    sys.exit(status)


def was_given(name: str) -> bool:
    """Whether option ``name`` was given on the command line."""
    ctx = click.get_current_context()
    return ctx.get_parameter_source(name) == click.core.ParameterSource.COMMANDLINE


#: ``ctx.meta`` key: the variable each option set from the environment was read from (the
#: option's name: ``ACP_PROXY_STATS_FORMAT`` or ``ACP_PROXY_FORMAT``; see ``cli``).
ENVIRONMENT = "acp_proxy.environment"


def set_by(name: str, ctx: click.Context | None = None) -> str:
    """`` (set by $ACP_PROXY_...)`` if option ``name``'s value came from the environment
    (an error about it then says where it is set), else nothing."""
    ctx = ctx or click.get_current_context(silent=True)
    if ctx is None or ctx.get_parameter_source(name) != click.core.ParameterSource.ENVIRONMENT:
        return ""
    variable = ctx.meta.get(ENVIRONMENT, {}).get(name)
    if variable is None:
        param = next((p for p in ctx.command.params if p.name == name), None)
        variable = param.envvar if param is not None and isinstance(param.envvar, str) else None
    return f" (set by ${variable})" if variable else ""


def overruled(name: str, *typed: str) -> bool:
    """Whether option ``name``, set in the environment, gives way to one of ``typed``, given
    on the command line, which it contradicts: a typed option wins (``--record`` typed
    records, whatever ``$ACP_PROXY_NO_RECORD`` says)."""
    ctx = click.get_current_context()
    if ctx.get_parameter_source(name) != click.core.ParameterSource.ENVIRONMENT:
        return False
    return any(was_given(other) for other in typed)


def no_effect(needed: str, *names: str) -> None:  # needed: "without --prune"
    """An option given on the command line where it has no effect is a usage error (exit
    2): what is set in the environment is for the commands it fits."""
    ctx = click.get_current_context()
    for param in ctx.command.params:
        if param.name in names:
            source = ctx.get_parameter_source(param.name)
            if source == click.core.ParameterSource.COMMANDLINE:
                option = max(param.opts, key=len)
                raise click.UsageError(f"{option} has no effect {needed}")


def not_stdout(why: str) -> Callable[[click.Context, click.Parameter, Any], Any]:
    """An option naming a file that ``-`` (standard output, as elsewhere) cannot be:
    ``--record -`` or ``--log-file -`` would write into what stdout carries."""

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value == "-":
            raise click.BadParameter(f"'-' would be standard output, {why}")
        return value

    return check


def envvar(name: str) -> str:
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


def color_option(description: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
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
            envvar=envvar("COLOR"),
            metavar="WHEN",
            help=f"{description}: auto (only on a terminal, not when NO_COLOR is set or "
            "TERM=dumb), always or never.",
        )(func)

    return add


def logging_options(func: Any) -> Any:
    func = color_option("Colour log lines")(func)
    func = click.option(
        "--log-format",
        type=click.Choice(["console", "json"]),
        default="console",
        show_default=True,
        envvar=envvar("LOG_FORMAT"),
        help="Format of log lines.",
    )(func)
    func = click.option(
        "--log-level",
        type=click.Choice(LEVELS, case_sensitive=False),
        default="info",
        show_default=True,
        envvar=envvar("LOG_LEVEL"),
        help="Least severe level logged. 'debug' logs every frame.",
    )(func)
    func = click.option(
        "--log-file",
        type=click.Path(dir_okay=False),
        envvar=envvar("LOG_FILE"),
        callback=not_stdout("which logs never go to: leave --log-file out to log to stderr"),
        help="Append logs to this file instead of stderr.",
    )(func)
    return func


def warn_deprecated(old: str, new: str) -> None:
    """An older spelling still works, and says (once) what to write instead."""
    if old not in _SAID:
        _SAID.add(old)
        say(f"acp-proxy: {old} is deprecated: use {new}")


#: The deprecation notes given so far.
_SAID: set[str] = set()


def cannot_write(path: str, exc: OSError) -> NoReturn:
    """A file that could not be written: one line, exit 1; but stdout (``-o -``) closed by
    its reader (``| head``) is no error: it goes on to the quiet exit of a closed stdout."""
    if path == "-" and isinstance(exc, BrokenPipeError):
        raise exc
    ctx = click.get_current_context(silent=True)
    where = ""
    if ctx is not None:  # a file named in the environment: said where (ACP_PROXY_OUTPUT)
        named = (param.name for param in ctx.command.params if param.name)
        where = next((set_by(n, ctx) for n in named if ctx.params.get(n) == path), "")
    raise click.ClickException(visible(f"cannot write {path}: {exc.strerror}{where}")) from None


class Unreadable(click.ClickException):
    """A recording that cannot be read: exit status 2, one clear line."""

    exit_code = 2

    def show(self, file: Any = None) -> None:
        say(f"acp-proxy: {self.message}")


@contextlib.contextmanager
def stdout_lines(color: str, live: bool = False) -> Iterator[Callable[[str], None]]:
    """The one output path for text. Lines are written in blocks (a write per line
    costs more than rendering it, and one system call each when PYTHONUNBUFFERED is
    set), or each at once when ``live``; coloured as ``color`` (``--color``) says."""
    keep = use_color(color)
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
            if pager.wait() in (126, 127):  # (the shell could not run it: said)
                say(f"acp-proxy: the pager failed (exit {pager.returncode}): see $PAGER")


def pager_option(func: Any) -> Any:
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
    that page (``show``, ``diff``, ``rules``: :func:`pager_option`), unless ``--no-pager``;
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

    where = " ($PAGER)" if "PAGER" in os.environ else ""
    program = _program(command)
    if program is not None and not _runnable(program):  # (as git: said, and not paged)
        say(f"acp-proxy: cannot run the pager {program}{where}: not found; not paging")
        return None

    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
    try:
        # (the user's $PAGER, run by the shell as git runs it)
        return subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=env)
    except OSError as exc:
        say(f"acp-proxy: cannot run the pager{where}: {exc.strerror or exc}; not paging")
        return None


#: Shell words a pager command may start with that are no program on PATH.
_SHELL_WORDS = frozenset({"exec", "command", "builtin", "eval", "{", "(", "!", "time"})


def _program(command: str) -> str | None:
    """The program a pager command runs, where it can be told (``less`` of ``LESS=R less``;
    None for a command the shell alone can make sense of)."""
    import shlex

    try:
        words = shlex.split(command)
    except ValueError:
        return None
    while words and "=" in words[0] and not words[0].startswith("="):
        words.pop(0)  # (VAR=value before the program)
    if not words or words[0] in _SHELL_WORDS or any(c in words[0] for c in "$`(){};|&<>*?"):
        return None
    return words[0]


def _runnable(program: str) -> bool:
    import shutil

    return shutil.which(program) is not None


def use_color(color: str, stream: Any = None) -> bool:
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


#: Lines written at once by :func:`stdout_lines`.
_BLOCK = 1024


def exempt_from_gc() -> None:
    """What exists now (modules, click, compiled checks) is never garbage: it leaves
    the cycle collector's scans."""
    gc.freeze()


# --- tab completion ------------------------------------------------------------------------


def complete_path(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """A file or directory argument completes as the shell completes file names (bash's
    own: ``~``, quoting, directories), not as a word list (``shell_complete=``)."""
    from click.shell_completion import CompletionItem

    return [CompletionItem(incomplete, type="file")]


def complete_rule(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[Any]:
    """A rule name completes as the rules of the catalog starting with what is typed."""
    from click.shell_completion import CompletionItem

    from acp_proxy.core.rules import RULES

    return [CompletionItem(name) for name in sorted(RULES) if name.startswith(incomplete)]


def install_completion() -> None:
    """Bash completion as git's: ``complete -o bashdefault -o default``, so that where
    acp-proxy offers nothing (an agent's arguments after ``--``, a word it does not know),
    bash's own file-name completion still works; click's script alone takes it away."""
    from click.shell_completion import BashComplete, add_completion_class

    class Bash(BashComplete):
        source_template = BashComplete.source_template.replace(
            "complete -o nosort -F", "complete -o nosort -o bashdefault -o default -F"
        )

    add_completion_class(Bash, "bash")
