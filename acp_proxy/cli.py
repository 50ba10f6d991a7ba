"""Command-line interface: the group and the entry point. Each command is defined beside the
code it drives, in its layer's ``commands`` package, a module each named for it
(``readers/commands/stats.py`` defines ``stats``), with its options, help, few words and
examples (:func:`acp_proxy.clihelp.command`); what the commands share is in ``clihelp``. The
group only assembles them (:data:`COMMANDS`), each module imported when its command is asked
for."""

from __future__ import annotations

import contextlib
import gc
import inspect
import os
import sys
from collections.abc import Iterator, Mapping, MutableMapping
from typing import TYPE_CHECKING, Any, NoReturn

import click

from acp_proxy import __version__
from acp_proxy.clihelp import ENVIRONMENT, EXIT_INTERRUPTED, Unreadable, exempt_from_gc, say, set_by

if TYPE_CHECKING:
    from acp_proxy.live.spawn import Early

# The command modules import only click and clihelp at their top: run's, probe's and chat's
# agent is started before this module is even loaded (acp_proxy.__main__), and `run` relays
# at once while the rest of the proxy (the validator, the schemas) loads; every other command
# imports what it uses, in its body (tests/test_launch.py holds it). The exit statuses are
# clihelp's (EXIT_*: the commands return them).

__all__ = ["COMMANDS", "cli", "main"]

#: Each command, and the module that defines it (as the attribute named as the module).
COMMANDS = {
    "run": "acp_proxy.live.commands.run",
    "replay": "acp_proxy.drive.commands.replay",
    "report": "acp_proxy.readers.commands.report",
    "redact": "acp_proxy.readers.commands.redact",
    "validate": "acp_proxy.readers.commands.validate",
    "ls": "acp_proxy.readers.commands.ls",
    "inspect": "acp_proxy.readers.commands.inspect",
    "search": "acp_proxy.readers.commands.search",
    "show": "acp_proxy.readers.commands.show",
    "follow": "acp_proxy.readers.commands.follow",
    "diff": "acp_proxy.readers.commands.diff",
    "stats": "acp_proxy.readers.commands.stats",
    "export": "acp_proxy.readers.commands.export",
    "rules": "acp_proxy.readers.commands.rules",
    "mcp": "acp_proxy.readers.commands.mcp",
    "demo": "acp_proxy.devtools.commands.demo",
    "probe": "acp_proxy.drive.commands.probe",
    "chat": "acp_proxy.drive.commands.chat",
    "test-agent": "acp_proxy.drive.commands.test_agent",
}

#: Allocations between the cycle collector's young collections (Python's default: 700).
GC_YOUNG = 50_000


def _interrupted() -> NoReturn:
    """Ctrl-C: stop quietly with 130, once what was being done has unwound (recordings get
    their end record on the way). Not through the interpreter's exit: a daemon thread
    reading stdin holds its lock, and finalizing the stream under it aborts (SIGABRT)."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(EXIT_INTERRUPTED)


class _Usage(click.UsageError):
    """A usage error in one line, as every other error of acp-proxy (exit 2):
    ``acp-proxy show: no such option '--bogus' (acp-proxy show --help)``."""

    def __init__(self, message: str, command: str) -> None:
        super().__init__(message)
        self.command = command

    def show(self, file: Any = None) -> None:
        say(f"{self.command}: {self.message} ({self.command} --help)")


class _Failed(click.ClickException):
    """What went wrong, said by the command it is about: ``acp-proxy report: cannot write
    out.html: Permission denied`` (never click's ``Error:``)."""

    def __init__(self, message: str, command: str, exit_code: int) -> None:
        super().__init__(message)
        self.command = command
        self.exit_code = exit_code  # type: ignore[misc]  # (the exception's, kept)

    def show(self, file: Any = None) -> None:
        say(f"{self.command}: {self.message}")


def _one_line(exc: click.UsageError, command: str) -> click.UsageError:
    """``exc`` said in one line by the command it is about (its context's, else
    ``command``); click's own sentence starts lowercase, its end without the stop."""
    if isinstance(exc, _Usage) or type(exc).__name__ == "NoArgsIsHelpError":
        return exc  # (bare `acp-proxy`: its help)
    if exc.ctx is not None:
        names, ctx = [], exc.ctx
        while ctx.parent is not None:
            names.append(ctx.info_name or "")
            ctx = ctx.parent
        command = " ".join(["acp-proxy", *reversed(names)])
    message = " ".join(exc.format_message().split())
    message = message.replace("Recognized values: , ", "Recognized values: ")  # (bool's "")
    if not message.endswith(".."):  # a sentence's stop, not an ellipsis ("[ARGS]...")
        message = message.removesuffix(".")
    param = getattr(exc, "param", None)
    if exc.ctx is not None and isinstance(param, click.Option) and param.name:
        message += set_by(param.name, exc.ctx)  # not on the command line: say where
    if message[:2].istitle():  # "No such option", "Invalid value", "Missing argument"
        message = message[0].lower() + message[1:]
    return _Usage(message, command)


class _Group(click.Group):
    """Commands whose recordings cannot be read end with one line, never a traceback;
    so do usage errors (exit 2); Ctrl-C stops any of them quietly (exit 130, no
    ``Aborted!``)."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            raise _one_line(exc, "acp-proxy") from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt:
            _interrupted()
        except click.UsageError as exc:
            command = " ".join(filter(None, ("acp-proxy", ctx.invoked_subcommand)))
            raise _one_line(exc, command) from None
        except click.ClickException as exc:
            command = " ".join(filter(None, ("acp-proxy", ctx.invoked_subcommand)))
            raise _Failed(exc.format_message(), command, exc.exit_code) from None
        except Exception as exc:
            # A RecordingError can only come from its module, once it is loaded.
            reading = sys.modules.get("acp_proxy.transcript.reading")
            if reading is not None and isinstance(exc, reading.RecordingError):
                command = " ".join(filter(None, ("acp-proxy", ctx.invoked_subcommand)))
                raise _Failed(str(exc), command, Unreadable.exit_code) from None
            raise


#: Options honoured only when typed, as git ignores ``safe.directory`` in a repository's own
#: config: each loosens the sandbox or answers for the user (the values that do; None: any
#: value but off). Set in the environment (exported once, it would act in every session of
#: the shell, unseen), they are ignored, with one line naming the variable.
TYPED_ONLY: dict[str, frozenset[str] | None] = {
    "--allow-terminal": None,  # chat, probe: the agent's commands run
    "--allow-client-actions": None,  # replay: the recording's writes and commands sent
    "--allow-write": None,  # test-agent: the client asked to write a file
    "--permissions": frozenset({"allow"}),  # chat, probe: every permission approved
    "--cwd": None,  # chat: the directory the agent's fs requests may touch
}

#: Repeatable options whose variable holds one value, spaces and all (a file name: an
#: addon file can list several addons); the others' are split at whitespace.
ONE_VALUE = frozenset({"--addon"})


def _tell_once(ctx: click.Context, line: str) -> None:
    """``line`` about the environment, said once a command line (not while completing)."""
    said = ctx.meta.setdefault("acp_proxy.environment_said", set())
    if not ctx.resilient_parsing and line not in said:
        said.add(line)
        say(f"acp-proxy {ctx.info_name}: {line}")


class _FromTheEnvironment(click.Option):
    """An option also read from the environment: ``ACP_PROXY_<COMMAND>_<OPTION>``, the
    command's own, else ``ACP_PROXY_<OPTION>``, shared by the commands (as git's
    ``pager.<cmd>`` over ``core.pager``); ``envvar`` holds the two, in that order. A shared
    value this command's option does not take but another command's does is for that one:
    ignored here, said once; one no command takes is this command's usage error, naming the
    variable. A switch of :data:`TYPED_ONLY` is never read from it."""

    #: ``ACP_PROXY_<COMMAND>_<OPTION>``, ``ACP_PROXY_<OPTION>``
    own: str
    shared: str

    def resolve_envvar_value(self, ctx: click.Context) -> str | None:
        own, shared = self.own, self.shared
        option = option_name(self)
        for variable in (own, shared):
            raw = os.environ.get(variable)
            if not raw:
                continue
            if self._loosens(option, raw):
                typed = option if TYPED_ONLY[option] is None else f"{option} {raw.strip()}"
                _tell_once(ctx, f"ignoring ${variable}: {typed} is honoured only when typed")
                continue
            if variable == shared and not _takes(self, ctx, raw) and _for_another(self, ctx, raw):
                _tell_once(
                    ctx,
                    f"ignoring ${variable}={raw!r}, not a {option} of {ctx.info_name} "
                    f"(${own} is its own)",
                )
                continue
            ctx.meta.setdefault(ENVIRONMENT, {})[self.name] = variable
            return raw
        return None

    def value_from_envvar(self, ctx: click.Context) -> Any:
        if self.multiple and option_name(self) in ONE_VALUE:
            raw = self.resolve_envvar_value(ctx)
            return None if raw is None else [raw]
        return super().value_from_envvar(ctx)

    def _loosens(self, option: str, raw: str) -> bool:
        if option not in TYPED_ONLY:
            return False
        values = TYPED_ONLY[option]
        if values is not None:
            return raw.strip().lower() in values
        return not (self.is_flag and click.types.BoolParamType.str_to_bool(raw) is False)


def option_name(param: click.Parameter) -> str:
    """An option's longest spelling: ``--no-record``."""
    return max(param.opts, key=len)


def _takes(param: click.Option, ctx: click.Context, raw: str) -> bool:
    """Whether ``param`` (of ``ctx``'s command) takes ``raw`` from the environment."""
    try:
        value = param.type_cast_value(ctx, [raw] if param.multiple else raw)
        if param.callback is not None and param.expose_value:
            param.callback(ctx, param, value)
    except (click.ClickException, ValueError, TypeError):
        return False
    return True


def _for_another(param: _FromTheEnvironment, ctx: click.Context, raw: str) -> bool:
    """Whether an option of another command read from the same shared variable takes
    ``raw`` (every command is loaded to know: only for a value this one does not take)."""
    group = ctx.parent.command if ctx.parent is not None else cli
    if not isinstance(group, click.Group):
        return False
    for name in group.list_commands(ctx):
        other = group.get_command(ctx, name)
        if other is None or name == ctx.info_name:
            continue
        same = (
            theirs
            for theirs in other.params
            if isinstance(theirs, _FromTheEnvironment) and theirs.shared == param.shared
        )
        if any(_takes(theirs, click.Context(other, info_name=name), raw) for theirs in same):
            return True
    return False


def _from_the_environment(command: click.Command, name: str) -> None:
    """Every option of ``command`` read from ``ACP_PROXY_<COMMAND>_<OPTION>``, else
    ``ACP_PROXY_<OPTION>`` too (``run --no-record``: ``ACP_PROXY_RUN_NO_RECORD``, else
    ``ACP_PROXY_NO_RECORD``; :class:`_FromTheEnvironment`). What the environment sets never
    counts as given: an option that would do nothing, or contradict the command line, is
    an error only when typed (:func:`~acp_proxy.clihelp.no_effect`), and a typed one wins."""
    prefix = "ACP_PROXY_" + name.upper().replace("-", "_")
    for param in command.params:
        if isinstance(param, click.Option) and not isinstance(param, _FromTheEnvironment):
            longest = option_name(param)  # (-l alone: its name, FILES_WITH_MATCHES)
            option = (longest if longest.startswith("--") else param.name or longest).lstrip("-")
            option = option.upper().replace("-", "_")
            param.__class__ = _FromTheEnvironment
            assert isinstance(param, _FromTheEnvironment)
            param.own, param.shared = f"{prefix}_{option}", f"ACP_PROXY_{option}"
            param.envvar = [param.own, param.shared]
    said = [p for p in command.params if isinstance(p, _FromTheEnvironment)]
    # (the example an option with a value where one has it: FORMAT, not LAST)
    example = next((p.own for p in said if not p.is_flag), said[0].own if said else None)
    if example is not None and command.help and prefix not in command.help:
        command.help = inspect.cleandoc(command.help) + (
            f"\n\nOptions may also be set in the environment: {prefix}_<OPTION> (this "
            f"command's, as {example}), else ACP_PROXY_<OPTION>; a typed option wins."
        )


class _Commands(MutableMapping[str, click.Command]):
    """The group's commands by name, each imported from its module when it is first asked
    for (``acp-proxy stats`` loads no other command; ``acp-proxy --help`` loads them all, for
    their few words), its options then read from the environment too."""

    def __init__(self, where: Mapping[str, str]) -> None:
        self._where = dict(where)
        self._loaded: dict[str, click.Command] = {}

    def __getitem__(self, name: str) -> click.Command:
        if name not in self._loaded:
            module = self._where[name]  # (KeyError: no such command)
            attribute = module.rpartition(".")[2]
            # (as an import statement does it: `python -X importtime` shows it, as importlib's
            # import_module is not)
            command = getattr(__import__(module, fromlist=[attribute]), attribute)
            _from_the_environment(command, name)
            self._loaded[name] = command
        return self._loaded[name]

    def __setitem__(self, name: str, command: click.Command) -> None:
        _from_the_environment(command, name)
        self._where.setdefault(name, "")
        self._loaded[name] = command

    def __delitem__(self, name: str) -> None:
        del self._where[name]
        self._loaded.pop(name, None)

    def __iter__(self) -> Iterator[str]:
        return iter(self._where)

    def __len__(self) -> int:
        return len(self._where)


def _version(ctx: click.Context, param: click.Parameter, value: bool) -> None:
    """``--version``: acp-proxy's, and the schemas it checks against (read when asked)."""
    if not value or ctx.resilient_parsing:
        return
    from acp_proxy.core.schema import schema_sources

    click.echo(f"acp-proxy, version {__version__}")
    click.echo(f"checks against {schema_sources().summary()}")
    ctx.exit()


@click.group(
    cls=_Group,
    commands=_Commands(COMMANDS),
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog="\b\nExamples:\n"
    "  acp-proxy run -- my-agent --acp     (as the agent command in the editor)\n"
    "  acp-proxy probe -- my-agent --acp\n"
    "  acp-proxy ls                        (the recorded sessions, newest first)\n"
    "  acp-proxy report session.jsonl\n"
    "\nacp-proxy COMMAND --help says more about each.",
)
@click.option(
    "-V",
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
    exempt_from_gc()
    gc.set_threshold(GC_YOUNG)
    _check_variables()


#: The variables that are no option's: a number of bytes each, above 0.
_BYTES = ("ACP_PROXY_MAX_FRAME", "ACP_PROXY_MAX_RECORD")


def _check_variables() -> None:
    """A variable of :data:`_BYTES` that holds no number of bytes: a usage error naming it
    (as an option's variable is), never a default taken in silence."""
    for name in _BYTES:
        value = os.environ.get(name, "")
        if value and not (value.isascii() and value.isdigit() and int(value) > 0):
            ctx = click.get_current_context()
            command = " ".join(filter(None, ("acp-proxy", ctx.invoked_subcommand)))
            raise _Usage(f"${name}={value!r} is not a number of bytes (above 0)", command)


def main(early: Early | None = None) -> None:
    """Entry point: the click group, plus a quiet exit when stdout is closed early.

    ``acp-proxy validate big.jsonl | head`` closes our stdout; that is not an
    error worth a traceback. ``early``: the agent ``acp_proxy.__main__`` started before
    loading this, for the command to take (the context's ``obj``); stopped if none does.
    """
    if "_ACP_PROXY_COMPLETE" in os.environ:  # (Tab: completion asked for, or its script)
        from acp_proxy.clihelp import install_completion

        install_completion()
    try:
        try:
            cli(standalone_mode=True, obj=early)
        finally:
            if early is not None:
                early.discard()
            sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    except KeyboardInterrupt:
        _interrupted()
