"""``chat``: talk to an agent from a terminal or a script (:mod:`acp_proxy.drive.chat`)."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click

from acp_proxy.clihelp import Seconds, color_option, command, exit_with, no_effect, say, use_color
from acp_proxy.drive.commands.shared import (
    addons_of,
    agent_argument,
    agent_starting,
    check_agent_options,
    protocol_option,
    recording_options,
)
from acp_proxy.log import configure, get_logger, open_log


@command(
    context_settings={"allow_interspersed_args": False},
    short="Talk to an agent from a terminal or a script.",
    examples=[
        "acp-proxy chat -- my-agent --acp",
        "acp-proxy chat --permissions allow -- my-agent < prompts.txt > replies.txt",
        "acp-proxy chat --format json -p 'Review this diff' -- my-agent < changes.diff",
    ],
)
@protocol_option
@click.option(
    "--cwd",
    type=click.Path(exists=True, file_okay=False, resolve_path=True),
    help="The session's working directory, and the only one the agent's fs requests may "
    "touch. Default: the current directory.",
)
@click.option("--session", "session_id", metavar="ID", help="Load or resume this session.")
@click.option(
    "-c",
    "--continue",
    "go_on",
    is_flag=True,
    help="Load or resume the last session of this agent command in --cwd, from the newest "
    "recording (as claude --continue).",
)
@click.option(
    "--timeout",
    type=Seconds(open_low=True, high=86_400.0),
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
    "-p",
    "--prompt",
    metavar="TEXT",
    help="One turn with this prompt, its answer on stdout, as piped. Piped stdin goes with "
    "it, after it as a <stdin> block (as codex exec; < /dev/null for none); -: the prompt "
    "is stdin, read to its end.",
)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: one JSON object a line on stdout, each with a type: start first, then "
    "text, thought, tool_call, plan, permission, finding, turn_end, ..., and result last "
    "(the README's table), as piped.",
)
@recording_options
@color_option("Colour the conversation")
@agent_argument
def chat(
    protocol: str,
    cwd: str | None,
    session_id: str | None,
    go_on: bool,
    timeout: float,
    permissions: str,
    allow_terminal: bool,
    prompt: str | None,
    fmt: str,
    record: str | None,
    no_record: bool,
    redact: bool,
    addon_files: tuple[str, ...],
    grace: float,
    color: str,
    command: tuple[str, ...],
) -> None:
    """Talk to AGENT (started behind the proxy, recorded and validated as by run): each
    line a prompt. On a terminal, the reply is drawn as it streams and permission requests
    are asked (Ctrl-C cancels a turn, /help lists the commands); piped, only the agent's
    text is written, on stdout (a loaded --session's history is not; /new, /mode, /model,
    /config, /cancel and /quit are the chat's, any other /WORD the agent's). -p TEXT: one
    turn, piped stdin after TEXT; --format json: a start object, the turn's, a result.

    \b
    Exit status: 0; 1 a turn failed (an error, a refusal, or cut off by --timeout), a
    finding was an error, or the agent is gone; 2 usage, or the agent cannot start;
    130 Ctrl-C.
    """
    no_record = check_agent_options(command, record, no_record)
    if no_record:
        no_effect("with --no-record", "redact")
    if go_on:
        session_id = _last_session(session_id, command, cwd)
    # On a terminal both ways, a conversation; stdout redirected (`> replies.txt`), it gets
    # the agent's text only, as when piped, and the lines typed are the prompts.
    # (--prompt and --format json: as piped, on a terminal too)
    interactive = sys.stdin.isatty() and sys.stdout.isatty() and fmt == "text" and prompt is None
    if interactive:
        no_effect("on a terminal (there, you are asked)", "permissions")
    from acp_proxy.drive import chat as chatting

    configure("warning", "console", open_log(None))
    if prompt is not None:
        try:
            prompt = chatting.script_prompt(prompt, sys.stdin.buffer, _note)
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
    options = chatting.Options(
        cwd=Path(cwd or os.getcwd()),
        protocol=int(protocol),
        session=session_id,
        timeout=timeout,
        permissions=permissions,
        allow_terminal=allow_terminal,
        record=record,
        no_record=no_record,
        redact=redact,
        addons=tuple(addons_of(addon_files)),
        grace=grace,
        fmt=fmt,
        prompt=prompt,
    )
    if allow_terminal:
        say(f"acp-proxy chat: --allow-terminal: the agent's commands WILL RUN (in {options.cwd})")
    with agent_starting("chat", command), _not_started(options, command[0]):
        status = chatting.chat(
            list(command),
            options,
            get_logger(),
            interactive=interactive,
            colour=use_color(color),
            err_colour=use_color(color, sys.stderr),
            early=click.get_current_context().obj,
        )
    exit_with(status)


def _last_session(session_id: str | None, command: tuple[str, ...], cwd: str | None) -> str:
    """``--continue``: the session to load or resume, from the recordings; said, or why
    there is none (exit 1, as ``claude --continue`` with nothing to continue)."""
    from acp_proxy.drive.chat.last import last_session
    from acp_proxy.transcript.names import default_record_dir

    if session_id is not None:
        raise click.UsageError("--continue and --session contradict each other")
    where = Path(cwd or os.getcwd())
    found = last_session(default_record_dir(), list(command), where)
    if found is None:
        say(f"acp-proxy chat: --continue: no recorded session of {' '.join(command)} in {where}")
        exit_with(1)
    say(f"acp-proxy chat: --continue: session {found}")
    return found


def _note(line: str) -> None:
    say(f"acp-proxy chat: {line}")


@contextlib.contextmanager
def _not_started(options: Any, agent: str) -> Iterator[None]:
    """``--format json``: an agent that cannot start is a result on stdout too (then said
    on stderr, exit 2)."""
    from acp_proxy.drive.chat import not_started
    from acp_proxy.live.spawn import AgentNotExecutable, AgentNotFound

    try:
        yield
    except (AgentNotFound, AgentNotExecutable) as exc:
        if options.fmt == "json":
            why = f"agent command cannot be executed: {exc}"
            if isinstance(exc, AgentNotFound):
                why = f"agent command not found: {agent}"
            with contextlib.suppress(OSError, ValueError):
                click.echo(not_started(options, why))
        raise
