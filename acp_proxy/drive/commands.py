"""``probe``, ``chat`` and ``replay``: their options and bodies beside the front-ends they
drive (only ``cli`` imports them). ``replay`` is here because ``--as client`` drives an agent
(over the client core); as the agent, it serves a recording on our stdio."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from acp_proxy.clihelp import (
    NOT_A_RECORDING_PLACE,
    _color_option,
    _colored,
    _connection,
    _connection_options,
    _env,
    _exit,
    _given,
    _logging_options,
    _not_stdout,
    _only_with,
    _open_log,
    _output,
    _say,
    _Seconds,
    _Unreadable,
)
from acp_proxy.core.visible import dumps, visible
from acp_proxy.log import configure, get_logger

if TYPE_CHECKING:
    from acp_proxy.drive.probe import ProbeResult


def _protocol_option(func: Any) -> Any:
    """``--protocol 1|2``: what the client asks for (probe and chat alike)."""
    return click.option(
        "--protocol",
        type=click.Choice(["1", "2"]),
        default="1",
        show_default=True,
        help="The ACP version to ask for (1: what shipping agents speak).",
    )(func)


def _recording_options(func: Any) -> Any:
    """``--record PATH``, ``--no-record``, ``--grace``: the session recorded and ended as by
    run (probe and chat alike)."""
    for option in reversed(
        (
            click.option(
                "--record",
                metavar="PATH",
                envvar=_env("RECORD"),
                callback=_not_stdout(NOT_A_RECORDING_PLACE),
                help="Where the session is recorded, as for run. Default: the recordings "
                "directory.",
            ),
            click.option("--no-record", is_flag=True, help="Do not record the session."),
            click.option(
                "--grace",
                type=_Seconds(high=60.0),
                default=2.0,
                show_default=True,
                help="Seconds the agent gets to exit at the end, before SIGTERM, then SIGKILL.",
            ),
        )
    ):
        func = option(func)
    return func


#: ``-- AGENT [ARGS]...``: the agent to start (probe and chat alike).
_agent_argument = click.argument(
    "command", nargs=-1, type=click.UNPROCESSED, metavar="-- AGENT [ARGS]..."
)


def _agent_given(command: tuple[str, ...], record: str | None, no_record: bool) -> None:
    """The usage errors probe and chat share: no AGENT (said as ``run`` says it, and not
    ending in a full stop, which the one-line form drops), or contradicting recording
    options."""
    if not command:
        raise click.UsageError("missing argument '-- AGENT [ARGS]...'")
    if no_record and record is not None and _given("record"):  # ($ACP_PROXY_RECORD: run's too)
        raise click.UsageError("--record and --no-record contradict each other")


@contextlib.contextmanager
def _starting(name: str, command: tuple[str, ...]) -> Iterator[None]:
    """An agent that cannot start: one line, exit 2 (probe and chat alike)."""
    from acp_proxy.live.spawn import AgentNotExecutable, AgentNotFound

    try:
        yield
    except AgentNotFound:
        _CANNOT_START["why"] = f"agent command not found: {visible(command[0])}"
        _say(f"acp-proxy {name}: agent command not found: {command[0]}")
        _exit(2)
    except AgentNotExecutable as exc:
        _CANNOT_START["why"] = f"agent command cannot be executed: {visible(str(exc))}"
        _say(f"acp-proxy {name}: agent command cannot be executed: {exc}")
        _exit(2)


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


class _ProbeCommand(click.Command):
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


@click.command(cls=_ProbeCommand, context_settings={"allow_interspersed_args": False})
@_protocol_option
@click.option(
    "--prompt",
    "prompt_text",
    metavar="TEXT",
    help="The prompt of the prompt turn. Default: to read hello.txt in the scratch "
    "directory and reply with its first line (an agent with tools uses one).",
)
@click.option(
    "--timeout",
    type=_Seconds(open_low=True, high=3600.0),
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
@_recording_options
@_color_option("Colour the checks' statuses")
@_agent_argument
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
    record: str | None,
    no_record: bool,
    grace: float,
    color: str,
    command: tuple[str, ...],
) -> None:
    """Check an agent without an editor: start AGENT behind the proxy (recorded and
    validated as by run), play the client, and run the checks (see --list).

    Text is written as each check ends; a failure says where to look (the frame: acp-proxy
    show --seq N REC; the rule: acp-proxy rules RULE; the spec page). With --format json
    or junit, a probe that cannot run still writes a valid document that says why.

    \b
    Exit status: 0 no check failed, 1 a check failed (one run for --only's checks too),
    2 the probe could not run."""
    if list_checks:
        _probe_list(command, fmt)
        return
    with _cannot_run(fmt, command):
        _probe_run(
            protocol, prompt_text, timeout, permissions, allow_terminal, auth, initialize,
            only, skip, fmt, record, no_record, grace, color, command,
        )  # fmt: skip


@contextlib.contextmanager
def _cannot_run(fmt: str, command: tuple[str, ...]) -> Iterator[None]:
    """A probe that cannot run (a usage error, an agent that cannot start: exit 2) still
    writes, with --format json or junit, a valid document that says why (a CI job that
    reads it gets the reason, not an empty file); the one line on stderr as ever."""
    _CANNOT_START.clear()
    try:
        yield
    except click.UsageError as exc:
        _probe_failed_document(fmt, command, exc.format_message())
        raise
    except SystemExit as exc:
        if exc.code == 2:
            _probe_failed_document(fmt, command, _CANNOT_START.get("why", "it could not start"))
        raise


#: Why the agent could not start, as ``_starting`` said it (for the document).
_CANNOT_START: dict[str, str] = {}


def _probe_failed_document(fmt: str, command: tuple[str, ...], why: str) -> None:
    if fmt == "text":
        return
    why = why[:1].lower() + why[1:]  # (as the line on stderr says it)
    from acp_proxy.drive import probe as probing

    with _output("never") as emit:
        if fmt == "json":
            import orjson

            emit(dumps(probing.cannot_run_json(list(command), why), option=orjson.OPT_INDENT_2)
                 .decode())  # fmt: skip
        else:
            emit(probing.cannot_run_junit(why))


def _probe_run(
    protocol: str,
    prompt_text: str | None,
    timeout: float,
    permissions: str,
    allow_terminal: bool,
    auth: str | None,
    initialize: str,
    only: tuple[str, ...],
    skip: tuple[str, ...],
    fmt: str,
    record: str | None,
    no_record: bool,
    grace: float,
    color: str,
    command: tuple[str, ...],
) -> None:
    from acp_proxy.drive import probe as probing

    _agent_given(command, record, no_record)
    if prompt_text is not None and not prompt_text.strip():
        raise click.UsageError("--prompt is empty (leave it out for the default prompt)")
    if all((only and name not in only) or name in skip for name in probing.CHECK_NAMES):
        raise click.UsageError("--only and --skip leave no check to run")
    if fmt != "text":
        _only_with(f"with --format {fmt}", "color", "no_color")
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
        initialize=initialize,
    )
    if prompt_text is not None and not options.prompts():
        raise click.UsageError(
            "--prompt has no effect without a check that sends it (prompt, permission, "
            "session-load)"
        )
    configure("warning", "console", _open_log(None))
    if allow_terminal:
        _say(
            "acp-proxy probe: --allow-terminal: commands the agent asks for WILL RUN "
            "(in the probe's scratch directory)"
        )
    colour = _colored(color) if fmt == "text" else False

    def style(text: str, name: str) -> str:
        return click.style(text, fg=name, bold=True) if colour else text

    say = lambda line: _say(f"acp-proxy probe: {line}")  # noqa: E731
    try:
        with _starting("probe", command):
            early = click.get_current_context().obj  # (the agent, if started before click)
            if fmt != "text":
                result = probing.probe(list(command), options, get_logger(), say=say,
                                       early=early)  # fmt: skip
            else:  # each check's lines as it ends
                with _output("always" if colour else "never", live=True) as emit:
                    stream = probing.TextStream(emit, style)
                    result = probing.probe(list(command), options, get_logger(), say=say,
                                           listener=stream, early=early)  # fmt: skip
                    if not stream.headed:
                        emit(probing.head_line(result.who, result.protocol))
                    for line in probing.tail_lines(result):
                        emit(line)
    except KeyboardInterrupt:
        _exit(130)
    if fmt != "text":
        _probe_output(result, fmt, color)
    _exit(1 if result.failed else 0)


#: probe's options that do nothing with --list (all but --format).
_PROBE_RUN_OPTIONS = (
    "protocol", "prompt_text", "timeout", "permissions", "allow_terminal", "auth", "initialize",
    "only",
    "skip", "record", "no_record", "grace", "color", "no_color",
)  # fmt: skip


def _probe_list(command: tuple[str, ...], fmt: str) -> None:
    """``probe --list``: the checks, as text or JSON; an option that would do nothing
    with it (it runs no agent) is a usage error."""
    from acp_proxy.drive import probe as probing

    if command:
        raise click.UsageError("--list takes no AGENT")
    _only_with("with --list", *_PROBE_RUN_OPTIONS)
    if fmt == "junit":
        raise click.UsageError("--format junit has no effect with --list (text or json)")
    with _output("never") as emit:
        if fmt == "json":
            import orjson

            emit(dumps(probing.list_json(), option=orjson.OPT_INDENT_2).decode())
            return
        for line in probing.list_lines():
            emit(line)


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


@click.command("test-agent")
@click.option(
    "--report",
    metavar="FILE",
    callback=_not_stdout("which carries the protocol: name a file"),
    help="Write the report here when the client is done (stdout carries the protocol; "
    "one summary line goes to stderr in any case).",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="The report's format: text, a line per check; json, one document.",
)
@click.option(
    "--allow-write",
    is_flag=True,
    help="Ask the client to write a file (acp-proxy-test-agent.txt, in the session's cwd). "
    "Off by default: nothing is written.",
)
@click.option(
    "--timeout",
    type=_Seconds(open_low=True, high=3600.0),
    default=30.0,
    show_default=True,
    help="Seconds the client gets for each answer, and to read what the agent writes "
    "(then the check fails, and the scenario asks nothing more).",
)
@click.option(
    "--record",
    metavar="PATH",
    envvar=_env("RECORD"),
    callback=_not_stdout(NOT_A_RECORDING_PLACE),
    help="Where the session is recorded, as for run. Default: the recordings directory.",
)
@click.option("--no-record", is_flag=True, help="Do not record the session.")
def test_agent(
    report: str | None,
    fmt: str,
    allow_write: bool,
    timeout: float,
    record: str | None,
    no_record: bool,
) -> None:
    """Be the agent a client (an editor, a plugin) talks to, and check the client: put
    `acp-proxy test-agent` where the agent command goes. Each prompt runs one scripted turn
    (every session update, a 1 MB chunk, a permission request, the client's files and
    terminal where it offers them) that ends with what passed and failed, in the chat. The
    session is recorded and validated as by run; stdout carries only the protocol.

    \b
    Exit status: 0 no check failed, 1 a check of the client failed, 2 usage."""
    if no_record and record is not None and _given("record"):
        raise click.UsageError("--record and --no-record contradict each other")
    if report is None:
        _only_with("without --report", "fmt")
    from acp_proxy.drive import test_agent as testing
    from acp_proxy.files import open_output

    out = None
    if report is not None:
        try:
            out = open_output(report)
        except OSError as exc:
            _say(f"acp-proxy test-agent: cannot write {report}: {exc.strerror or exc}")
            _exit(2)
    configure("warning", "console", _open_log(None))
    if allow_write:
        _say("acp-proxy test-agent: --allow-write: the client will be asked to write a file")
    options = testing.Options(allow_write=allow_write, timeout=timeout)
    try:
        result = testing.serve(options, get_logger(), record=record, no_record=no_record)
    except KeyboardInterrupt:
        _exit(130)
    if out is not None:
        if fmt == "json":
            import orjson

            text = dumps(result.as_json(), option=orjson.OPT_INDENT_2).decode() + "\n"
        else:
            text = "".join(visible(line) + "\n" for line in result.text_lines())
        with os.fdopen(out, "w", encoding="utf-8") as stream:
            stream.write(text)
    _say(f"acp-proxy test-agent: {result.summary()}")
    _exit(1 if result.failed else 0)


@click.command(context_settings={"allow_interspersed_args": False})
@_protocol_option
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
    help="How permission requests are answered when stdin or stdout is not a terminal "
    "(on one, you are asked).",
)
@click.option(
    "--allow-terminal",
    is_flag=True,
    help="Offer a terminal: run the commands the agent asks for, in --cwd. Off by default.",
)
@click.option(
    "--prompt",
    metavar="TEXT",
    help="One turn with this prompt (stdin is not read), its answer on stdout, as piped.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: one JSON object a line on stdout, each with a type (text, thought, "
    "tool_call, plan, permission, finding, turn_end, ...), as piped.",
)
@_recording_options
@_color_option("Colour the conversation")
@_agent_argument
def chat(
    protocol: str,
    cwd: str | None,
    session_id: str | None,
    timeout: float,
    permissions: str,
    allow_terminal: bool,
    prompt: str | None,
    fmt: str,
    record: str | None,
    no_record: bool,
    grace: float,
    color: str,
    command: tuple[str, ...],
) -> None:
    """Talk to AGENT (started behind the proxy, recorded and validated as by run): each
    line a prompt. On a terminal, the reply is drawn as it streams and permission requests
    are asked (Ctrl-C cancels a turn, /help lists the commands); piped, only the agent's
    text is written, on stdout (a loaded --session's history is not; /new, /mode, /model,
    /config, /cancel and /quit are the chat's, any other /WORD the agent's).

    \b
    Exit status: 0; 1 a turn failed (an error, a refusal, or cut off by --timeout), a
    finding was an error, or the agent is gone; 2 usage, or the agent cannot start;
    130 Ctrl-C.
    """
    _agent_given(command, record, no_record)
    # On a terminal both ways, a conversation; stdout redirected (`> replies.txt`), it gets
    # the agent's text only, as when piped, and the lines typed are the prompts.
    # (--prompt and --format json: as piped, on a terminal too)
    interactive = sys.stdin.isatty() and sys.stdout.isatty() and fmt == "text" and prompt is None
    if interactive:
        _only_with("on a terminal (there, you are asked)", "permissions")
    from acp_proxy.drive import chat as chatting

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
        fmt=fmt,
        prompt=prompt,
    )
    if allow_terminal:
        _say(f"acp-proxy chat: --allow-terminal: the agent's commands WILL RUN (in {options.cwd})")
    with _starting("chat", command):
        status = chatting.chat(
            list(command),
            options,
            get_logger(),
            interactive=interactive,
            colour=_colored(color),
            err_colour=_colored(color, sys.stderr),
            early=click.get_current_context().obj,
        )
    _exit(status)


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


@click.command()  # options after RECORDING too; after `--`, the agent's command is its own
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
    callback=_not_stdout(NOT_A_RECORDING_PLACE),
    help="As the client: record the new session there (as `run --record` does).",
)
@click.option(
    "--junit",
    metavar="FILE",
    help="As the client: also write the divergences as JUnit XML (a failure each) to FILE "
    "(-: stdout).",
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
    from acp_proxy.drive.replay import EXIT_NOT_EXECUTABLE, EXIT_NOT_FOUND, drive_agent
    from acp_proxy.readers.replay import AgentReplay, load_script, serve_agent

    stream = _open_log(log_file)
    configure(log_level.lower(), log_format, stream, _colored(color, stream))
    log = get_logger()
    agent = _replay_usage(role, agent, allow_actions, recording)
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
        _say(f"acp-proxy: {visible(result.divergences[-1])}")  # (as run says it)
        sys.exit(result.proxy_status)
    for line in result.divergences:
        _say(f"acp-proxy replay: divergence: {line}")
    if junit is not None:
        from acp_proxy.files import open_output
        from acp_proxy.readers.ci import junit_divergences

        try:
            # (- is stdout: as the client, nothing else is written there)
            with os.fdopen(open_output(junit, dash=True), "w", encoding="utf-8") as out:
                out.write(junit_divergences(recording, result.divergences) + "\n")
        except OSError as exc:
            raise click.ClickException(visible(f"cannot write {junit}: {exc.strerror}")) from None
    frames = sum(1 for step in script.steps)
    if result.ok:
        log.info("the agent answered as recorded", frames=frames)
    sys.exit(0 if result.ok else 1)


def _replay_usage(
    role: str, agent: tuple[str, ...], allow_actions: bool, recording: str
) -> tuple[str, ...]:
    """The agent command of ``replay``, once the options fit the role (a usage error if
    not)."""
    if agent[:1] == ("--",):  # `--` after RECORDING separates the agent's own arguments
        agent = agent[1:]
    if role == "agent" and recording == "-":  # (as the client, stdin is free: - is fine)
        raise click.UsageError(
            "RECORDING - would be standard input, which the client speaks on to the agent "
            "the replay plays: name a file"
        )
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
    times = "once" if len(actions) == 1 else f"{len(actions)} times"
    _say(f"acp-proxy replay: the recording asks the editor to act {times}, {what}:")
    for step in actions:
        _say(f"  {action_summary(step)}")
