"""Command-line interface: the group, the examples every ``--help`` ends with, and the entry
point. Each command lives beside the code it drives (``readers.commands``, ``live.commands``,
``drive.commands``, ``devtools.commands``); what they share is in ``clihelp``."""

from __future__ import annotations

import contextlib
import gc
import os
import sys
from typing import TYPE_CHECKING, Any, NoReturn

import click

from acp_proxy import __version__
from acp_proxy.clihelp import EXIT_INTERRUPTED, _say, _settle, _Unreadable
from acp_proxy.devtools import commands as devtools_commands
from acp_proxy.drive import commands as drive_commands
from acp_proxy.live import commands as live_commands
from acp_proxy.readers import commands as readers_commands

if TYPE_CHECKING:
    from acp_proxy.live.spawn import Early

# The command modules import only click and clihelp at their top: run's, probe's and chat's
# agent is started before this module is even loaded (acp_proxy.__main__), and `run` relays
# at once while the rest of the proxy (the validator, the schemas) loads; every other command
# imports what it uses, in its body (tests/test_launch.py holds it). The exit statuses are
# clihelp's (EXIT_*: the commands return them).

__all__ = ["cli", "main"]

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
        _say(f"{self.command}: {self.message} ({self.command} --help)")


class _Failed(click.ClickException):
    """What went wrong, said by the command it is about: ``acp-proxy report: cannot write
    out.html: Permission denied`` (never click's ``Error:``)."""

    def __init__(self, message: str, command: str, exit_code: int) -> None:
        super().__init__(message)
        self.command = command
        self.exit_code = exit_code  # type: ignore[misc]  # (the exception's, kept)

    def show(self, file: Any = None) -> None:
        _say(f"{self.command}: {self.message}")


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
    param = getattr(exc, "param", None)
    if exc.ctx is not None and isinstance(param, click.Option) and param.name:
        source = exc.ctx.get_parameter_source(param.name)
        if source == click.core.ParameterSource.ENVIRONMENT and param.envvar:
            message += f" (set by ${param.envvar})"  # not on the command line: say where
    if not message.endswith(".."):  # a sentence's stop, not an ellipsis ("[ARGS]...")
        message = message.removesuffix(".")
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
                raise _Failed(str(exc), command, _Unreadable.exit_code) from None
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


for _command in (
    live_commands.run,
    drive_commands.replay,
    readers_commands.report,
    readers_commands.redact,
    readers_commands.validate,
    readers_commands.list_recordings,
    readers_commands.inspect,
    readers_commands.search,
    readers_commands.show,
    readers_commands.follow,
    readers_commands.diff,
    readers_commands.stats,
    readers_commands.rules,
    devtools_commands.demo,
    drive_commands.probe,
    drive_commands.chat,
    drive_commands.test_agent,
):
    cli.add_command(_command)


def _from_the_environment(command: click.Command) -> None:
    """Every option of ``command`` read from ``ACP_PROXY_<OPTION>`` too (``--no-record``:
    ``ACP_PROXY_NO_RECORD``), unless it names its own variable. What the environment sets
    never counts as given: an option that would do nothing, or contradict the command
    line, is an error only when typed (:func:`~acp_proxy.clihelp._only_with`)."""
    for param in command.params:
        if isinstance(param, click.Option) and param.envvar is None:
            longest = max(param.opts, key=len)  # (-l alone: its name, FILES_WITH_MATCHES)
            name = (longest if longest.startswith("--") else param.name or longest).lstrip("-")
            name = name.upper().replace("-", "_")
            param.envvar = f"ACP_PROXY_{name}"


for _command in cli.commands.values():
    _from_the_environment(_command)


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
        "acp-proxy search --rule 'message-id-*' . out/",
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
        "acp-proxy diff --session sess_0001 --format json a.jsonl b.jsonl",
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
        "acp-proxy chat --permissions allow -- my-agent < prompts.txt > replies.txt",
        "acp-proxy chat --format json --prompt 'Say hello' -- my-agent",
    ],
    "test-agent": [
        "acp-proxy test-agent --report /tmp/client.txt   (as the client's agent command)",
        "acp-proxy test-agent --format json --report client.json --allow-write",
    ],
    "demo": ["acp-proxy demo", "acp-proxy demo --scenario misbehaving --record /tmp/demo.jsonl"],
}
for _name, _lines in _EXAMPLES.items():
    cli.commands[_name].epilog = "\b\nExamples:\n" + "\n".join(f"  {line}" for line in _lines)

#: Each command in a few words, for the group's list (its docstring's first sentence is
#: cut there at the terminal's width).
_SHORT = {
    "run": "Relay an agent's stdio, recording and validating it.",
    "probe": "Check an agent without an editor.",
    "chat": "Talk to an agent from a terminal or a script.",
    "test-agent": "Be the agent a client talks to, and check the client.",
    "demo": "Try the proxy on the example agent.",
    "show": "A recording as a timeline or as the conversation.",
    "follow": "Show a recording live as it grows (tail -f).",
    "report": "A recording as one self-contained HTML page.",
    "inspect": "Serve the sessions' pages on 127.0.0.1, live.",
    "validate": "Check recorded sessions again; exit 1 on an error.",
    "rules": "The rules the validator checks, or one explained.",
    "stats": "Figures: traffic, methods, latency, turns.",
    "diff": "What changed between two recorded sessions.",
    "ls": "The recorded sessions, newest first.",
    "search": "Frames across recordings matching a pattern.",
    "redact": "A copy of a recording safe to share.",
    "replay": "Play a recording as the agent, or as the client.",
}
for _name, _short in _SHORT.items():
    cli.commands[_name].short_help = _short
cli.epilog = (
    "\b\nExamples:\n"
    "  acp-proxy run -- my-agent --acp     (as the agent command in the editor)\n"
    "  acp-proxy probe -- my-agent --acp\n"
    "  acp-proxy ls                        (the recorded sessions, newest first)\n"
    "  acp-proxy report session.jsonl\n"
    "\nacp-proxy COMMAND --help says more about each."
)


def main(early: Early | None = None) -> None:
    """Entry point: the click group, plus a quiet exit when stdout is closed early.

    ``acp-proxy validate big.jsonl | head`` closes our stdout; that is not an
    error worth a traceback. ``early``: the agent ``acp_proxy.__main__`` started before
    loading this, for the command to take (the context's ``obj``); stopped if none does.
    """
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
