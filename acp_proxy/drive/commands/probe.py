"""``probe``: an agent checked without an editor (:mod:`acp_proxy.drive.probe`)."""

from __future__ import annotations

import contextlib
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING

import click

from acp_proxy.clihelp import (
    Command,
    Seconds,
    color_option,
    command,
    exit_with,
    no_effect,
    say,
    stdout_lines,
    use_color,
)
from acp_proxy.core.visible import dumps, visible
from acp_proxy.drive.commands.shared import (
    WHY_NOT_STARTED,
    addons_of,
    agent_argument,
    agent_starting,
    check_agent_options,
    protocol_option,
    recording_options,
)
from acp_proxy.log import configure, get_logger, open_log

if TYPE_CHECKING:
    from acp_proxy.drive.probe import Options, ProbeResult


def _probe_checks(
    ctx: click.Context, param: click.Parameter, value: tuple[str, ...]
) -> tuple[str, ...]:
    from acp_proxy.drive.probe import CHECK_NAMES

    names = tuple(part.strip() for item in value for part in item.split(","))  # (a,b as a b)
    for name in names:
        if name not in CHECK_NAMES:
            raise click.BadParameter(
                f'no check "{visible(name)}" (one of: {", ".join(CHECK_NAMES)}; see probe --list)'
            )
    return names


class _ProbeCommand(Command):
    """probe's command: a usage error found while its options are read (an unknown check,
    a --timeout out of range) still gets the document --format json or junit asked for."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        given = list(args)  # (the parser consumes the list)
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            ours = given[: given.index("--")] if "--" in given else given
            fmt = next(
                (ours[i + 1] for i, arg in enumerate(ours[:-1]) if arg == "--format"),
                next((arg.split("=", 1)[1] for arg in ours if arg.startswith("--format=")), ""),
            )
            if fmt in ("json", "junit"):
                _probe_failed_document(fmt, (), exc.format_message())
            raise


@command(
    cls=_ProbeCommand,
    context_settings={"allow_interspersed_args": False},
    short="Check an agent without an editor.",
    examples=[
        "acp-proxy probe -- my-agent --acp",
        "acp-proxy probe --only prompt --only cancel -- my-agent",
        "acp-proxy probe --format junit -- my-agent > probe.xml",
    ],
)
@protocol_option
@click.option(
    "--prompt",
    "prompt_text",
    metavar="TEXT",
    help="The prompt of the prompt turn. Default: to read hello.txt in the scratch "
    "directory and reply with its first line (an agent with tools uses one).",
)
@click.option(
    "--timeout",
    type=Seconds(open_low=True, high=3600.0),
    default=30.0,
    show_default=True,
    help="Seconds each step may take: a response, or a whole turn (then it is cancelled, "
    "and its answer waited for as long again).",
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
    "--initialize",
    "initialize",
    type=click.Choice(["editor", "plain"]),
    default="editor",
    show_default=True,
    help="editor: initialize as the common editors do (v1: clientCapabilities._meta "
    'opt-ins "terminal-auth" and "terminal_output"); plain: the capabilities alone.',
)
@click.option(
    "--only",
    multiple=True,
    metavar="CHECK",
    callback=_probe_checks,
    help="Run only this check (repeatable, or comma-separated: handshake,session-new); what "
    "it needs runs too, unreported (permission: a prompt turn).",
)
@click.option(
    "--skip",
    multiple=True,
    metavar="CHECK",
    callback=_probe_checks,
    help="Leave this check out (repeatable, or comma-separated).",
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
    "--strict",
    is_flag=True,
    help="Warnings fail too (exit 1), as validate --strict: a SHOULD, a suggested error "
    "code, a peer suite's stricter rule.",
)
@recording_options
@color_option("Colour the checks' statuses")
@agent_argument
def probe(
    protocol: str,
    prompt_text: str | None,
    timeout: float,
    permissions: str,
    allow_terminal: bool,
    auth: str | None,
    initialize: str,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    list_checks: bool,
    fmt: str,
    strict: bool,
    record: str | None,
    no_record: bool,
    redact: bool,
    addon_files: tuple[str, ...],
    grace: float,
    color: str,
    command: tuple[str, ...],
) -> None:
    """Check an agent without an editor: start AGENT behind the proxy (recorded and
    validated as by run), play the client, and run the checks (see --list).

    Text is written as each check ends; a failure says where to look (the frame: acp-proxy
    show --seq N REC; the rule: acp-proxy rules RULE; the spec page). With --format json
    or junit, a probe that cannot run still writes a valid document that says why.

    A check ends pass, fail (a MUST broken), warn (a SHOULD, a suggested code, a peer
    suite's stricter rule: said, failing nothing unless --strict) or skip (not advertised,
    or what it needs failed: fail fast).

    \b
    Exit status: 0 no check failed, 1 a check failed (one run for --only's checks too;
    --strict: or warned), 2 the probe could not run."""
    if list_checks:
        _probe_list(command, fmt)
        return
    with _cannot_run(fmt, command):
        from acp_proxy.drive import probe as probing

        no_record = check_agent_options(command, record, no_record)
        if no_record:
            no_effect("with --no-record", "redact")
        if prompt_text is not None and not prompt_text.strip():
            raise click.UsageError("--prompt is empty (leave it out for the default prompt)")
        if all((only and name not in only) or name in skip for name in probing.CHECK_NAMES):
            raise click.UsageError("--only and --skip leave no check to run")
        if fmt != "text":
            no_effect(f"with --format {fmt}", "color", "no_color")
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
            redact=redact,
            addons=tuple(addons_of(addon_files)),
            grace=grace,
            initialize=initialize,
            strict=strict,
        )
        if prompt_text is not None and not options.prompts():
            raise click.UsageError(
                "--prompt has no effect without a check that sends it (prompt, permission, "
                "session-load)"
            )
        configure("warning", "console", open_log(None))
        if allow_terminal:
            say(
                "acp-proxy probe: --allow-terminal: commands the agent asks for WILL RUN "
                "(in the probe's scratch directory)"
            )
        colour = use_color(color) if fmt == "text" else False
        result = _checked(command, options, fmt, colour)
        if fmt != "text":
            _probe_output(result, fmt, color)
        exit_with(1 if result.failed else 0)


@contextlib.contextmanager
def _cannot_run(fmt: str, command: tuple[str, ...]) -> Iterator[None]:
    """A probe that cannot run (a usage error, an agent that cannot start: exit 2) still
    writes, with --format json or junit, a valid document that says why (a CI job that
    reads it gets the reason, not an empty file); the one line on stderr as ever."""
    WHY_NOT_STARTED.clear()
    try:
        yield
    except click.UsageError as exc:
        _probe_failed_document(fmt, command, exc.format_message())
        raise
    except SystemExit as exc:
        if exc.code == 2:
            _probe_failed_document(fmt, command, WHY_NOT_STARTED.get("why", "it could not start"))
        raise


def _probe_failed_document(fmt: str, command: tuple[str, ...], why: str) -> None:
    if fmt == "text":
        return
    why = why[:1].lower() + why[1:]  # (as the line on stderr says it)
    from acp_proxy.drive import probe as probing

    with stdout_lines("never") as emit:
        if fmt == "json":
            import orjson

            emit(dumps(probing.cannot_run_json(list(command), why), option=orjson.OPT_INDENT_2)
                 .decode())  # fmt: skip
        else:
            emit(probing.cannot_run_junit(why))


def _checked(command: tuple[str, ...], options: Options, fmt: str, colour: bool) -> ProbeResult:
    """The probe run (text: each check's lines written as it ends); Ctrl-C: 130."""
    from acp_proxy.drive import probe as probing

    def style(text: str, name: str) -> str:
        return click.style(text, fg=name, bold=True) if colour else text

    tell = lambda line: say(f"acp-proxy probe: {line}")  # noqa: E731
    try:
        with agent_starting("probe", command):
            early = click.get_current_context().obj  # (the agent, if started before click)
            if fmt != "text":
                return probing.probe(list(command), options, get_logger(), say=tell,
                                     early=early)  # fmt: skip
            with stdout_lines("always" if colour else "never", live=True) as emit:
                stream = probing.TextStream(emit, style, _status_line())
                result = probing.probe(list(command), options, get_logger(), say=tell,
                                       listener=stream, early=early)  # fmt: skip
                if not stream.headed:
                    emit(probing.head_line(result.who, result.protocol))
                for line in probing.tail_lines(result):
                    emit(line)
                return result
    except KeyboardInterrupt:
        exit_with(130)


def _status_line() -> Callable[[str], None] | None:
    """On a terminal (stdout and stderr both), the check running now, on stderr's one line
    rewritten (``\r``, erased to its end); elsewhere nothing (a pipe gets the checks' lines
    only)."""
    if not (sys.stdout.isatty() and sys.stderr.isatty()):
        return None

    def status(text: str) -> None:
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"\r\x1b[K{text}")
            sys.stderr.flush()

    return status


#: probe's options that do nothing with --list (all but --format).
_PROBE_RUN_OPTIONS = (
    "protocol", "prompt_text", "timeout", "permissions", "allow_terminal", "auth", "initialize",
    "only",
    "skip", "strict", "record", "no_record", "redact", "addon_files", "grace", "color",
    "no_color",
)  # fmt: skip


def _probe_list(command: tuple[str, ...], fmt: str) -> None:
    """``probe --list``: the checks, as text or JSON; an option that would do nothing
    with it (it runs no agent) is a usage error."""
    from acp_proxy.drive import probe as probing

    if command:
        raise click.UsageError("--list takes no AGENT")
    no_effect("with --list", *_PROBE_RUN_OPTIONS)
    if fmt == "junit":
        raise click.UsageError("--format junit has no effect with --list (text or json)")
    with stdout_lines("never") as emit:
        if fmt == "json":
            import orjson

            emit(dumps(probing.list_json(), option=orjson.OPT_INDENT_2).decode())
            return
        for line in _fitted(probing.list_lines()):
            emit(line)


def _fitted(lines: Iterable[str]) -> Iterator[str]:
    """``--list``'s lines as they are for a pipe (a check a line, for grep), wrapped at the
    terminal's width on one, each check's words under its description's column."""
    if not sys.stdout.isatty():
        yield from lines
        return
    import shutil
    import textwrap

    width = max(shutil.get_terminal_size().columns - 1, 40)
    for line in lines:
        columns = re.match(r"\S+\s+\S+\s+", line)  # (name and level: the description's column)
        head = columns.end() if columns is not None else 0
        indent = " " * (head if head < width // 2 else 4)
        wrapped = textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False)
        yield from wrapped or [""]


def _probe_output(result: ProbeResult, fmt: str, color: str) -> None:
    """probe's report on stdout: text (coloured as ``--color`` says), json, junit."""
    from acp_proxy.drive import probe as probing

    if fmt == "json":
        import orjson

        with stdout_lines("never") as emit:
            emit(dumps(result.as_json(), option=orjson.OPT_INDENT_2).decode())
        return
    if fmt == "junit":
        from acp_proxy.readers.ci import junit_checks

        with stdout_lines("never") as emit:
            emit(junit_checks("acp-proxy probe", probing.junit_cases(result)))
        return
    colour = use_color(color)

    def style(text: str, name: str) -> str:
        return click.style(text, fg=name, bold=True) if colour else text

    with stdout_lines("always" if colour else "never") as emit:
        for line in probing.text_lines(result, style):
            emit(line)
